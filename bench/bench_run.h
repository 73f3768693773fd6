// `lact bench`: LaCT and the full-attention baseline timed in one process on the same inputs (random weights):
// encode seconds, render FPS, state size and sustained GFLOP/s over a grid of view counts and sizes, as a
// markdown table, JSON, CSV and a log-log plot; optionally the PyTorch reference in the same run.
#pragma once

#include "bench/bench_options.h"

namespace lact::bench {

// The whole bench as the options ask: --gemm-libraries, --distributed / --scaling, or the timing grid (its
// output files checked before, check_output_files).
void run_bench(const BenchOptions& o);
// --json, --csv and --plot checked before any work: the CLI calls it before run_bench and before the ranks of
// --distributed start, so a refusal ends the launch before MPI does anything.
void check_output_files(const BenchOptions& o);

// `lact bench --distributed mpi` (encode across ranks against one rank, bytes per layer) and `--scaling`
// (the model of scaling to many GPUs), bench/bench_distributed.cpp.
void run_distributed_bench(const BenchOptions& o);
// `lact bench --gemm-libraries` (bench/bench_gemm.cpp).
void run_gemm_library_bench(const BenchOptions& o);
// `lact bench --lpips`: LPIPS per target view against one rendered view (bench/bench_lpips.cpp).
void run_lpips_bench(const BenchOptions& o);

}  // namespace lact::bench

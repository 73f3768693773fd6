// The backend's switches read from the environment (LACT_ATTENTION, LACT_SPLIT_K, LACT_BF16_ACTIVATIONS), checked
// once where every backend is made (make_backend), whichever backend it is: they act on the CUDA backend only,
// but a value it would refuse is a mistake on the CPU too, said there as it is on CUDA rather than ignored.
#pragma once

namespace lact {

// Error naming the first variable whose value is not one it takes (its parser's line, the value cut to 40 bytes
// and made safe to print); unset and empty are valid.
void check_backend_environment();

}  // namespace lact

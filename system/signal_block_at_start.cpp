// lact's first step, before the constructors of the libraries it links: the dynamic loader runs an executable's
// .preinit_array before any shared object's initializers (the ELF gABI). A library that starts threads when it is
// loaded (the pthread build of OpenBLAS starts its worker pool so) then starts them with SIGINT, SIGTERM and SIGHUP
// blocked, as main's later threads are, and the signals reach only signal_cleanup's receiving thread.
//
// Linked into the lact executable alone (app/CMakeLists.txt), as an object of its own rather than in lact_system:
// a program that links lact_system but never calls install_signal_cleanup (a unit test, a fuzzer) would keep the
// three signals blocked for good, and Ctrl-C would not stop it.
#include "system/signal_cleanup.h"

namespace {

void block_signals_at_start(int, char**, char**) { lact::block_terminating_signals_at_start(); }

}  // namespace

#if defined(__ELF__)
__attribute__((section(".preinit_array"),
               used)) void (*const lact_block_signals_at_start)(int, char**, char**) = block_signals_at_start;
#endif

// apps/measure.h — what a command costs: wall time and peak memory.

#ifndef ETPACK_APPS_MEASURE_H_
#define ETPACK_APPS_MEASURE_H_

#include <chrono>

namespace etpack::cli {

// Seconds since `start`.
double SecondsSince(std::chrono::steady_clock::time_point start);
// This process's peak resident set in MiB.
double PeakRssMiB();

}  // namespace etpack::cli

#endif  // ETPACK_APPS_MEASURE_H_

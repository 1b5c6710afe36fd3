// The tests' main: one for Catch2 2 (whose implementation this file then
// compiles) and Catch2 3 (whose implementation is its library).
#define CATCH_CONFIG_RUNNER
#include "catch.h"

int main(int argc, char** argv) { return Catch::Session().run(argc, argv); }

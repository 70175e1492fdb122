// The translation unit that builds a shared precompiled header (cmake/StrataComponent.cmake:
// strata_pch_* for the libraries, tests/CMakeLists.txt: strata_test_pch); no code of its own.

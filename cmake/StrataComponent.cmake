# strata_warnings(<target>): the project's warning set on a target's C++ sources (-Wall
# -Wextra), and -Werror when STRATA_WARNINGS_AS_ERRORS is on (scripts/test.sh and the
# sanitizer run turn it on, so CI fails on a new warning). Project targets only: the
# third-party headers come in as system includes and never fail the build.
function(strata_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
  if(STRATA_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()

# strata_add_component(NAME <name> SOURCES ... [DEPS ...])
# Creates the library target strata_<name> with alias strata::<name>; includes are
# repository-root relative ("models/model_spec.h").
function(strata_add_component)
  cmake_parse_arguments(C "" "NAME" "SOURCES;DEPS" ${ARGN})
  add_library(strata_${C_NAME} STATIC ${C_SOURCES})
  add_library(strata::${C_NAME} ALIAS strata_${C_NAME})
  target_include_directories(strata_${C_NAME} PUBLIC ${PROJECT_SOURCE_DIR})
  strata_warnings(strata_${C_NAME})
  if(C_DEPS)
    target_link_libraries(strata_${C_NAME} PUBLIC ${C_DEPS})
  endif()
  strata_use_library_pch(strata_${C_NAME})
endfunction()

# strata_use_library_pch(<target>): under clang (the sanitizer and fuzz presets) the library
# reuses a precompiled header of the standard, fmt, yaml-cpp and nlohmann-json headers
# (STRATA_PRECOMPILE_HEADERS). Measured on 2 cores, from scratch: the sanitizer build's CPU
# time 352 -> 305 s (at -O0 a unit is mostly header parsing); under GCC -O3 the library
# units went 345 -> 336 s and the two PCHs cost 16 s, so GCC builds parse the text. A PCH
# is valid only for units compiled with its flags, and clang refuses one built without
# libFuzzer's coverage for a unit with it, so the fuzzed libraries (STRATA_FUZZ_LIBS) have
# their own, as do the folders compiled at -O1 in Release; the first library of a flavour
# makes it with its folder's options. A target with CUDA sources keeps the text (nvcc).
function(strata_use_library_pch target)
  if(NOT STRATA_PRECOMPILE_HEADERS OR NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  foreach(source IN LISTS sources)
    if(source MATCHES "\\.cu$")
      return()
    endif()
  endforeach()
  get_directory_property(folder_options COMPILE_OPTIONS)
  set(flavour o3)
  if(folder_options MATCHES "-O1")
    set(flavour o1)
  endif()
  set(fuzzed OFF)
  if(STRATA_BUILD_FUZZ AND target IN_LIST STRATA_FUZZ_LIBS)
    set(fuzzed ON)
    string(APPEND flavour _fuzz)
  endif()
  set(pch strata_pch_${flavour})
  if(NOT TARGET ${pch})
    add_library(${pch} OBJECT ${PROJECT_SOURCE_DIR}/cmake/pch_anchor.cpp)
    target_link_libraries(${pch} PRIVATE fmt::fmt yaml-cpp nlohmann_json::nlohmann_json)
    strata_warnings(${pch})
    if(fuzzed)
      target_compile_options(${pch} PRIVATE ${STRATA_FUZZ_FLAGS})
    endif()
    target_precompile_headers(${pch} PRIVATE
      <fmt/format.h> <yaml-cpp/yaml.h> <nlohmann/json.hpp>
      <algorithm> <cmath> <cstdint> <filesystem> <fstream> <functional> <map> <memory>
      <optional> <set> <sstream> <string> <string_view> <utility> <vector>)
  endif()
  target_precompile_headers(${target} REUSE_FROM ${pch})
  # The PCH's headers need these targets' include paths and macros (FMT_SHARED) alike.
  target_link_libraries(${target} PRIVATE fmt::fmt yaml-cpp nlohmann_json::nlohmann_json)
endfunction()

# strata_add_test(NAME <name> SOURCES ... DEPS ... [SHARDS n] [COST c]): one GoogleTest
# executable, registered with ctest test discovery (one ctest test per GoogleTest test), or
# with STRATA_TEST_WHOLE_PROGRAMS as ctest tests that each run a share of its tests in one
# process: n of them (GoogleTest's GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX), so that a long
# program does not hold one of CI's two cores to the end while the other idles. COST (whole
# programs only): ctest starts the costliest first, so the long ones do not come last.
function(strata_add_test)
  cmake_parse_arguments(T "" "NAME;SHARDS;COST" "SOURCES;DEPS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_DEPS} GTest::gtest_main)
  strata_warnings(${T_NAME})
  target_compile_definitions(${T_NAME} PRIVATE
    STRATA_SOURCE_DIR="${PROJECT_SOURCE_DIR}" STRATA_BINARY_DIR="${PROJECT_BINARY_DIR}")
  strata_use_test_pch(${T_NAME})
  if(STRATA_TEST_WHOLE_PROGRAMS)
    if(NOT T_SHARDS)
      set(T_SHARDS 1)
    endif()
    if(NOT T_COST)
      set(T_COST 0)
    endif()
    math(EXPR last "${T_SHARDS} - 1")
    foreach(i RANGE ${last})
      set(test ${T_NAME})
      if(T_SHARDS GREATER 1)
        set(test ${T_NAME}_${i})
      endif()
      add_test(NAME ${test} COMMAND ${T_NAME})
      set_tests_properties(${test} PROPERTIES TIMEOUT 1800 COST ${T_COST}
        ENVIRONMENT "GTEST_TOTAL_SHARDS=${T_SHARDS};GTEST_SHARD_INDEX=${i}")
    endforeach()
  else()
    gtest_discover_tests(${T_NAME} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
  endif()
endfunction()

# strata_use_test_pch(<target>): the test program reuses the precompiled GoogleTest, fmt,
# yaml-cpp and standard-library headers of strata_test_pch (tests/CMakeLists.txt), when
# STRATA_PRECOMPILE_HEADERS is on. Parsing those headers was 2-3 s of every test
# translation unit, about a third of a test build.
function(strata_use_test_pch target)
  if(TARGET strata_test_pch)
    target_precompile_headers(${target} REUSE_FROM strata_test_pch)
    # GCC uses a PCH only where the macros its headers test are defined alike: fmt's
    # FMT_SHARED comes with fmt::fmt, which a test that never calls fmt would lack.
    target_link_libraries(${target} PRIVATE fmt::fmt)
  endif()
endfunction()

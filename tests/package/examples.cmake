# tests/package: build examples/ against the installed package (as tests/package/run.cmake does for the
# consumer) and run both programs with their cache in WORK_DIR: here, without a GPU, their CPU part
# (bank analysis, compile-only warm-up for sm_90); on a GPU machine, all of it. Any failure fails the test.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
function(run_step out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}${err}")
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()
set(env "${CMAKE_COMMAND}" -E env "SWZJIT_CACHE_DIR=${WORK_DIR}/cache" --unset=SWZJIT_CACHE_READ_ONLY)
run_step(ignored "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
run_step(ignored "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK_DIR}/build" -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
run_step(ignored "${CMAKE_COMMAND}" --build "${WORK_DIR}/build")
run_step(first ${env} "${WORK_DIR}/build/engine_app")
# A second process finds every kernel of the first in the on-disk cache.
run_step(second ${env} "${WORK_DIR}/build/engine_app")
if(NOT second MATCHES "  0 NVRTC compiles")
  message(FATAL_ERROR "the second engine_app run compiled kernels again: the cache did not keep them\n${second}")
endif()
run_step(own ${env} "${WORK_DIR}/build/own_family")
# examples/tile_transpose_add.family is the same definition as text: the installed swz reads it, and its
# definition hash (the key of tuned winners) must equal the C++ definition's.
run_step(shown "${WORK_DIR}/prefix/bin/swz" family show "${SOURCE_DIR}/tile_transpose_add.family")
string(REGEX MATCH "definition hash ([0-9a-f]+)" _ "${own}")
set(cpp_hash "${CMAKE_MATCH_1}")
string(REGEX MATCH "definition hash ([0-9a-f]+)" _ "${shown}")
if(cpp_hash STREQUAL "" OR NOT cpp_hash STREQUAL CMAKE_MATCH_1)
  message(FATAL_ERROR "tile_transpose_add.family (hash '${CMAKE_MATCH_1}') and own_family.cpp's definition "
                      "(hash '${cpp_hash}') differ: keep them the same")
endif()
# The template path given explicitly works as well (and the cache now holds every kernel).
run_step(ignored ${env} "${WORK_DIR}/build/own_family" "${SOURCE_DIR}/tile_transpose_add.cuh")

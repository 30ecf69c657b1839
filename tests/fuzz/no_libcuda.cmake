# tests/fuzz: fails if a built binary needs libcuda or libnvrtc (or libxxhash). The library dlopens the
# driver (runtime/driver/driver.cpp) and NVRTC (runtime/jit/nvrtc_loader.cpp), so everything must start
# on a machine without them, sanitizer builds included; xxHash is compiled in from its header.
# Usage: cmake -DREADELF=readelf "-DFILES=a;b;c" -P no_libcuda.cmake
if(NOT READELF)
  set(READELF readelf)
endif()
set(_bad "")
foreach(_file IN LISTS FILES)
  if(NOT EXISTS "${_file}")
    message(FATAL_ERROR "no_libcuda: ${_file} does not exist (build it first)")
  endif()
  execute_process(COMMAND "${READELF}" -d "${_file}" OUTPUT_VARIABLE _out ERROR_VARIABLE _err
                  RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "no_libcuda: ${READELF} -d ${_file} failed (${_rc}): ${_err}")
  endif()
  string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*" _needed "${_out}")
  set(_names "")
  foreach(_line IN LISTS _needed)
    string(REGEX REPLACE ".*\\[(.*)\\].*" "\\1" _name "${_line}")
    list(APPEND _names "${_name}")
    if(_name MATCHES "^lib(cuda|nvrtc|xxhash)\\.so")
      list(APPEND _bad "${_file} needs ${_name}")
    endif()
    # The remote cache tier dlopens hiredis only when SWZJIT_REMOTE_CACHE is set (runtime/cache/remote.cpp).
    if(_name MATCHES "^libhiredis")
      list(APPEND _bad "${_file} needs ${_name} (load it lazily, never link it)")
    endif()
  endforeach()
  message(STATUS "${_file}: NEEDED ${_names}")
endforeach()
if(_bad)
  list(JOIN _bad "\n  " _msg)
  message(FATAL_ERROR "no_libcuda: binaries link a library that is meant to be loaded at run time (libcuda, "
                      "libnvrtc) or compiled in (libxxhash), so they cannot start without it; link none of "
                      "CUDA::cuda_driver, CUDA::nvrtc or libxxhash (see the top-level CMakeLists.txt):\n  ${_msg}")
endif()

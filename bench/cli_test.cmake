# bench: one refusal case of a benchmark program's command line (bench/CMakeLists.txt): runs PROG with the
# arguments ARGS ('|'-separated) and passes only when it exits 2 and its output matches EXPECT.
string(REPLACE "|" ";" _args "${ARGS}")
execute_process(COMMAND "${PROG}" ${_args} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err TIMEOUT 20)
if(NOT _rc EQUAL 2)
  message(FATAL_ERROR "${PROG} ${ARGS}: exit status ${_rc}, not 2\n${_out}${_err}")
endif()
string(FIND "${_out}${_err}" "${EXPECT}" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "${PROG} ${ARGS}: the output lacks '${EXPECT}'\n${_out}${_err}")
endif()

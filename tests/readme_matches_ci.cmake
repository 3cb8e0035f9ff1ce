# Fails unless the command .ci/run runs is one of the README's two top commands.
file(STRINGS "${ROOT}/.ci/run" ci REGEX "^[^#].*scripts/")
file(READ "${ROOT}/README.md" readme)
string(STRIP "${ci}" ci)
string(FIND "${readme}" "${ci}" at)
if(at EQUAL -1 OR at GREATER 1500)
  message(FATAL_ERROR ".ci/run runs '${ci}', which is not the README's test command")
endif()

# cmake -DINPUT=file -DOUTPUT=file.inc -P embed_lines.cmake
#
# Writes the lines of INPUT as C string literals, one per line and each
# followed by a comma, for an array the binary carries (ISO C compilers
# need not take one literal past 4095 characters). Backslashes, quotes and
# "??" (a trigraph's start) are escaped; tabs stay as they are.
file(READ "${INPUT}" text)
string(REGEX REPLACE "\n$" "" text "${text}")
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "??" "?\\?" text "${text}")
string(REPLACE "\n" "\",\n\"" text "${text}")
file(WRITE "${OUTPUT}.tmp" "/* Generated from ${INPUT} by cmake/embed_lines.cmake: edit that file. */\n\"${text}\",\n")
configure_file("${OUTPUT}.tmp" "${OUTPUT}" COPYONLY) # rewritten only when it changed
file(REMOVE "${OUTPUT}.tmp")

# Included by plugins/CMakeLists.txt before optimizer-adamw_32bit is defined (in its scope).
# adamw_32bit is bitsandbytes' AdamW with 32-bit state, the same optimizer as adamw_8bit's with
# another setting: its module links adamw_8bit's code (plugins/optimizer/adamw_8bit/*.cc, the
# object library optimizer-adamw_8bit-code, whose include path is plugins/) rather than a second
# copy of it. Both targets exist only once the folder loop is done, hence the deferred call.
cmake_language(DEFER CALL target_link_libraries optimizer-adamw_32bit PRIVATE
               optimizer-adamw_8bit-code)

# HAP_FUZZ=ON (top-level CMakeLists.txt): every target of this build tree is compiled with
# libFuzzer's coverage instrumentation, AddressSanitizer and UndefinedBehaviorSanitizer, so the
# engine and the store report their memory errors and undefined behaviour under the fuzz targets
# of fuzz/. Use a build folder of its own (scripts/fuzz.sh configures build-fuzz/ with clang-14).
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "HAP_FUZZ needs clang (libFuzzer): configure with CXX=clang++-14, or run scripts/fuzz.sh")
endif()
# Undefined behaviour stops the run (a finding), as a memory error does.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer)
add_link_options(-fsanitize=address,undefined)

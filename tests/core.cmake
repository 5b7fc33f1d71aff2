# Core: the law (docs/formulas.md §7 and the validation rules), config resolution over the real
# fixture configs, the CLI's contract, and the config-parser fuzzer.
kvscope_add_qtest(NAME tst_law SOURCES tst_law.cpp LIBS kvscope_core)
kvscope_add_qtest(NAME tst_law_validation SOURCES tst_law_validation.cpp LIBS kvscope_core)
kvscope_add_qtest(NAME tst_model SOURCES tst_model.cpp LIBS kvscope_core)
kvscope_add_qtest(NAME tst_step SOURCES tst_step.cpp LIBS kvscope_core)
kvscope_add_qtest(NAME tst_layers SOURCES tst_layers.cpp LIBS kvscope_core)
kvscope_add_qtest(NAME tst_dtype SOURCES tst_dtype.cpp LIBS kvscope_core)
kvscope_add_qtest(NAME tst_cli SOURCES tst_cli.cpp LIBS kvscope_core)
add_dependencies(tst_cli kvscope-cli)
kvscope_add_qtest(NAME tst_weights SOURCES tst_weights.cpp LIBS kvscope_core)

if(KVSCOPE_FUZZ)
    # libFuzzer needs clang; the project may be compiled with GCC, so the fuzzer is a separate
    # clang build of the parser's sources, run for a short bounded time by CTest.
    # The fuzzer compiles every source of kvscope_core (the parser reaches most of the core
    # through evaluate), so a new core file needs no second list here.
    get_target_property(_core_sources kvscope_core SOURCES)
    list(FILTER _core_sources INCLUDE REGEX "\\.cpp$")
    get_target_property(_core_dir kvscope_core SOURCE_DIR)
    list(TRANSFORM _core_sources PREPEND ${_core_dir}/ REGEX "^[^/]")
    set(_fuzz_sources ${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_config.cpp ${_core_sources})
    get_target_property(_json_inc nlohmann_json::nlohmann_json INTERFACE_INCLUDE_DIRECTORIES)
    set(_fuzz_includes -I${PROJECT_SOURCE_DIR})
    foreach(_inc IN LISTS _json_inc)
        list(APPEND _fuzz_includes -I${_inc})
    endforeach()
    set(_fuzz_bin ${CMAKE_CURRENT_BINARY_DIR}/kvscope-fuzz-config)
    add_custom_command(OUTPUT ${_fuzz_bin}
        COMMAND ${KVSCOPE_CLANGXX} -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined
                -fno-sanitize-recover=undefined ${_fuzz_includes} ${_fuzz_sources} -o ${_fuzz_bin}
        DEPENDS ${_fuzz_sources}
        COMMENT "Building the config-parser fuzzer with clang (libFuzzer + ASan + UBSan)"
        VERBATIM)
    add_custom_target(kvscope_fuzzer ALL DEPENDS ${_fuzz_bin})
    set(_corpus ${CMAKE_CURRENT_BINARY_DIR}/fuzz_corpus)
    file(MAKE_DIRECTORY ${_corpus})
    set(KVSCOPE_FUZZ_SECONDS 30 CACHE STRING "How long CTest runs the config-parser fuzzer")
    add_test(NAME fuzz_config
             COMMAND ${_fuzz_bin} -max_total_time=${KVSCOPE_FUZZ_SECONDS} -rss_limit_mb=2048
                     -max_len=65536 -print_final_stats=1 ${_corpus} ${KVSCOPE_FIXTURES_DIR}
                     ${PROJECT_SOURCE_DIR}/resources/models ${PROJECT_SOURCE_DIR}/tests/fuzz/seeds)
    set_tests_properties(fuzz_config PROPERTIES TIMEOUT 300 LABELS fuzz)
endif()

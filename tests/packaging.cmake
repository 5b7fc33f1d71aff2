# The package's metadata pass the freedesktop and AppStream validators, and kvscope-cli
# --version (and kvscope --version) print this project's version.
find_program(KVSCOPE_DESKTOP_FILE_VALIDATE desktop-file-validate)
if(KVSCOPE_DESKTOP_FILE_VALIDATE)
    add_test(NAME desktop_file_validate
             COMMAND ${KVSCOPE_DESKTOP_FILE_VALIDATE} ${PROJECT_SOURCE_DIR}/resources/kvscope.desktop)
    set_tests_properties(desktop_file_validate PROPERTIES LABELS packaging)
else()
    message(STATUS "desktop_file_validate: skipped (desktop-file-validate not found)")
endif()

find_program(KVSCOPE_APPSTREAMCLI appstreamcli)
if(KVSCOPE_APPSTREAMCLI)
    add_test(NAME appstream_validate
             COMMAND ${KVSCOPE_APPSTREAMCLI} validate --no-net
                     ${PROJECT_SOURCE_DIR}/resources/io.github.kvscope.metainfo.xml)
    set_tests_properties(appstream_validate PROPERTIES LABELS packaging)
else()
    message(STATUS "appstream_validate: skipped (appstreamcli not found)")
endif()

string(REPLACE "." "\\." _kvscope_version_re "${PROJECT_VERSION}")
add_test(NAME cli_version COMMAND kvscope-cli --version)
set_tests_properties(cli_version PROPERTIES LABELS packaging
                     PASS_REGULAR_EXPRESSION "^kvscope-cli ${_kvscope_version_re}\n$")

# The desktop app answers --version without a display (it prints before Qt starts).
if(TARGET kvscope)
    add_test(NAME gui_version COMMAND kvscope --version)
    set_tests_properties(gui_version PROPERTIES LABELS packaging
                         PASS_REGULAR_EXPRESSION "^kvscope ${_kvscope_version_re}\n$")
endif()

# The features' headless half: stories, compare, the planner, engine logs and sessions.
foreach(_t tst_story tst_compare tst_plan tst_explain_log tst_session tst_engines tst_explore)
    if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${_t}.cpp)
        continue()
    endif()
    kvscope_add_qtest(NAME ${_t} SOURCES ${_t}.cpp LIBS kvscope_core)
    set_target_properties(${_t} PROPERTIES AUTOMOC ON) # Q_OBJECT test classes
    target_compile_definitions(${_t} PRIVATE
        KVSCOPE_TEST_DATA_DIR="${CMAKE_CURRENT_SOURCE_DIR}/data")
    # The CLI exit-code cases run kvscope-cli, so build it first.
    if(TARGET kvscope-cli)
        add_dependencies(${_t} kvscope-cli)
    endif()
endforeach()

# The report's one field list: text report, --json and export; with the GUI, the PDF rows and
# the numbers panel.
kvscope_add_qtest(NAME tst_report SOURCES tst_report.cpp LIBS kvscope_core)
if(TARGET kvscope_ui)
    kvscope_add_qtest(NAME tst_report_gui SOURCES tst_report_gui.cpp LIBS kvscope_ui GUI)
endif()

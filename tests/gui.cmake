# GUI tests (offscreen): the real MainWindow driven through its sliders, the fixtures, the
# error banner and the screenshot path.
if(TARGET kvscope_ui)
    kvscope_add_qtest(NAME tst_gui SOURCES tst_gui.cpp LIBS kvscope_ui GUI LABELS gui)
    set_target_properties(tst_gui PROPERTIES AUTOMOC ON)
    kvscope_add_qtest(NAME tst_gui_engine SOURCES tst_gui_engine.cpp LIBS kvscope_ui GUI LABELS gui)
    set_target_properties(tst_gui_engine PROPERTIES AUTOMOC ON)
    kvscope_add_qtest(NAME tst_window SOURCES tst_window.cpp LIBS kvscope_ui GUI LABELS gui)
    kvscope_add_qtest(NAME tst_stepplot SOURCES tst_stepplot.cpp LIBS kvscope_ui GUI LABELS gui)
endif()

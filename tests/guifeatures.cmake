# The GUI features (offscreen): story mode, compare, plan, explain-log, sessions,
# PDF/numbers export, presentation mode and the measurement overlay on the CPU backend.
if(TARGET kvscope_ui)
    kvscope_add_qtest(NAME tst_gui_features SOURCES tst_gui_features.cpp
                      LIBS kvscope_ui kvscope_gpu GUI LABELS gui)
    kvscope_add_qtest(NAME tst_gui_measure SOURCES tst_gui_measure.cpp
                      LIBS kvscope_ui kvscope_gpu GUI LABELS gui)
endif()

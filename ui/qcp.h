// QCustomPlot's header uses the `signals` and `foreach` keywords, which this project turns off
// (QT_NO_KEYWORDS, QT_NO_FOREACH). Include it through this wrapper only.
#pragma once

#ifndef signals
#define KVSCOPE_QCP_SIGNALS
#define signals Q_SIGNALS
#endif
#ifndef slots
#define KVSCOPE_QCP_SLOTS
#define slots Q_SLOTS
#endif
#ifndef foreach
#define KVSCOPE_QCP_FOREACH
#define foreach(declaration, container) for (declaration : container)
#endif

#include <qcustomplot.h>

#ifdef KVSCOPE_QCP_SIGNALS
#undef signals
#undef KVSCOPE_QCP_SIGNALS
#endif
#ifdef KVSCOPE_QCP_SLOTS
#undef slots
#undef KVSCOPE_QCP_SLOTS
#endif
#ifdef KVSCOPE_QCP_FOREACH
#undef foreach
#undef KVSCOPE_QCP_FOREACH
#endif

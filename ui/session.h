// Sessions: the window's whole state as a small JSON file (core/features/session.h), and the local
// Hugging Face cache as a source of models.
#pragma once

#include "core/features/session.h"
#include "ui/appstate.h"

#include <QString>

class QWidget;

namespace kvscope::ui {

class MainWindow;

/// The state as a session: the model reference, the GPU preset id (or its figures when the
/// GPU was edited), the deployment.
kvscope::Session sessionFromState(const AppState& s);
/// Resolves a session into the state the window takes; errors name the field.
bool stateFromSession(const kvscope::Session& session, AppState* out, QString* error);

bool saveWindowSession(const MainWindow& w, const QString& path, QString* error);
/// Loads a session into the window; on error the state stays and `error` names the field.
bool loadWindowSession(MainWindow& w, const QString& path, QString* error);

/// A dialog listing config.json files in the Hugging Face cache; the chosen one is loaded.
void openFromHuggingFaceCache(MainWindow& w);

} // namespace kvscope::ui

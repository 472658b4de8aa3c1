// The font of every text the app lays out in columns (logs, --explain text, command lines): the
// platform's fixed-width font, asked for as fixed pitch, so that fontconfig picks a monospace face
// even where the system's "monospace" alias names one it reports as dual-width (Noto Sans Mono).
#pragma once

#include <QFont>

namespace hap::studio {

QFont fixedFont();

}  // namespace hap::studio

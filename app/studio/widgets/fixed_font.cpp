#include "app/studio/widgets/fixed_font.h"

#include <QFontDatabase>

namespace hap::studio {

QFont fixedFont() {
  QFont font = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  font.setStyleHint(QFont::Monospace);
  font.setFixedPitch(true);
  return font;
}

}  // namespace hap::studio

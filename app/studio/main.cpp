// hap-studio [MODEL.pt] [--cluster C.yaml] [--plan PLAN.json] [--input NAME=DIMxDIM...:DTYPE]...
// [--screenshot FILE]: the application's names, then the command line (widgets/studio_main.h).
#include <QApplication>

#include "app/studio/widgets/studio_main.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("HAP Studio"));
  QApplication::setApplicationName(QStringLiteral("hap-studio"));
  QApplication::setApplicationDisplayName(QStringLiteral("HAP Studio"));
  QApplication::setApplicationVersion(QStringLiteral(HAP_STUDIO_VERSION));
  return hap::studio::studioMain(QApplication::arguments());
}

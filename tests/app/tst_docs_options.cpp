// The docs name only real commands and options (issue 29 item 8). Every invocation of `hap`,
// `hap-worker` or `hap-studio` in README.md and docs/*.md, in a code span or a shell code block,
// must name a command that exists and only options that the command's --help lists; the built
// executables are asked (HAP_CLI_PATH, HAP_WORKER_PATH, HAP_STUDIO_PATH from the test's CMake).
//
// What counts as an invocation (so that other tools' options are never checked):
// - a command whose program word is hap, hap-worker or hap-studio (any folder: build/app/cli/hap),
//   after an optional `$ ` prompt, VAR=value assignments and a wrapper (time, env, exec, nohup,
//   sudo, timeout, xvfb-run with its own options). Commands are split at standalone `;`, `&&`,
//   `||` and `|` (a `|` followed by an option is a synopsis's alternative, not a pipe); a
//   command's `#` comment ends it. cmake, ctest, python3, scripts/*.sh and the rest are skipped.
// - `hap WORD` where WORD is a subcommand (its --help has usage `hap WORD`), to any depth
//   (`hap runs show`); an option is valid when the command or a parent below `hap` lists it
//   (`hap runs show ID --json`: CLI11's fallthrough). A word that is no subcommand is an error.
// - options after a standalone `--` of `hap launch` are the worker's (checked against
//   hap-worker); after `--` elsewhere nothing is checked. Placeholders (`hap SUBCOMMAND`) are
//   skipped.
// - a code span that starts with an option (`--segments layer`) in a section whose heading names
//   an invocation (`### \`hap plan MODEL.pt ...\``) is that command's option.
// Only long options (--name) are checked.
#include <QtTest>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHash>
#include <QProcess>
#include <QRegularExpression>

#include <algorithm>
#include <optional>

namespace {

// One command line found in a doc.
struct Invocation {
  QString where;        // "docs/cli.md:42"
  QString text;         // the command as written (for messages)
  QStringList words;    // program name first (hap, hap-worker, hap-studio), then its arguments
};

const QStringList kPrograms = {"hap", "hap-worker", "hap-studio"};
const QStringList kWrappers = {"time", "env", "exec", "nohup", "sudo", "timeout", "xvfb-run"};

bool isOption(const QString& w) {
  static const QRegularExpression re("^--[a-z0-9][a-z0-9-]*");
  return re.match(w).hasMatch();
}

// "--db" from "[--db", "--input=x", "--json|--csv]".
QString optionName(QString w) {
  static const QRegularExpression re("^--[a-z0-9][a-z0-9-]*");
  return re.match(w).captured(0);
}

QString bare(QString w) {
  while (w.startsWith('[') || w.startsWith('(')) w.remove(0, 1);
  while (w.endsWith(']') || w.endsWith(')') || w.endsWith("...") || w.endsWith(QChar(0x2026)))
    w.chop(w.endsWith("...") ? 3 : 1);
  return w;
}

// The program a word names: "hap" for build/app/cli/hap, "" for anything else.
QString programOf(const QString& word) {
  const QString name = word.section('/', -1);
  return kPrograms.contains(name) ? name : QString();
}

// Splits one line of shell (or a code span) into the commands that invoke a program of ours.
QList<QStringList> commandsIn(const QString& line) {
  QStringList tokens = line.split(QRegularExpression("\\s+"), Qt::SkipEmptyParts);
  QList<QStringList> segments{{}};
  for (int i = 0; i < tokens.size(); ++i) {
    QString t = tokens[i];
    if (t.startsWith('#')) break;  // a comment
    const bool pipe = t == "|" && !(i + 1 < tokens.size() && bare(tokens[i + 1]).startsWith('-'));
    if (t == ";" || t == "&&" || t == "||" || pipe) {
      segments.append(QStringList{});
      continue;
    }
    if (t.endsWith(';') && t.size() > 1) {
      segments.last().append(t.chopped(1));
      segments.append(QStringList{});
      continue;
    }
    segments.last().append(t);
  }
  QList<QStringList> out;
  static const QRegularExpression assignment("^[A-Za-z_][A-Za-z0-9_]*=");
  static const QRegularExpression number("^[0-9.]+[smh]?$");
  for (QStringList s : segments) {
    int i = 0;
    if (i < s.size() && s[i] == "$") ++i;
    while (i < s.size() && assignment.match(s[i]).hasMatch()) ++i;
    while (i < s.size() && kWrappers.contains(s[i])) {
      ++i;
      while (i < s.size() && (s[i].startsWith('-') || number.match(s[i]).hasMatch() ||
                              assignment.match(s[i]).hasMatch()))
        ++i;
    }
    if (i >= s.size()) continue;
    const QString program = programOf(s[i]);
    if (program.isEmpty()) continue;
    QStringList words{program};
    words += s.mid(i + 1);
    out.append(words);
  }
  return out;
}

// Every invocation in one Markdown text (file name for messages).
QList<Invocation> scan(const QString& file, const QString& markdown) {
  QList<Invocation> out;
  const QStringList lines = markdown.split('\n');
  std::optional<QStringList> section;  // the command of the current section's heading, if any
  static const QRegularExpression fence("^\\s*(```|~~~)\\s*([A-Za-z0-9_-]*)");
  static const QRegularExpression span("(`+)(.+?)\\1");
  static const QRegularExpression heading("^#{1,6}\\s");
  static const QStringList shells = {"", "sh", "bash", "shell", "console", "text"};

  // Spans of `text`, whose lines start at `starts` (offsets) and whose first line is `line`.
  auto fromSpans = [&](const QString& text, int line, const QList<int>& starts, bool isHeading) {
    bool named = false;
    for (auto it = span.globalMatch(text); it.hasNext();) {
      const QRegularExpressionMatch m = it.next();
      const QString code = m.captured(2).trimmed();
      const QString where = QStringLiteral("%1:%2").arg(file).arg(
          line + static_cast<int>(std::count_if(starts.begin() + 1, starts.end(),
                                                [&](int s) { return s <= m.capturedStart(); })));
      const QList<QStringList> commands = commandsIn(code);
      for (const QStringList& c : commands) {
        out.append({where, code, c});
        if (isHeading && !named && c != QStringList{"hap"}) {  // `hap` alone names no command
          section = c;
          named = true;
        }
      }
      if (commands.isEmpty() && section && isOption(code)) {
        // An option alone, in a section about a command: that command's option.
        QStringList words = *section;
        int keep = 1;
        while (keep < words.size() && !words[keep].startsWith('-') && !words[keep].startsWith('['))
          ++keep;
        words = words.mid(0, keep);  // the program and its subcommand words (and positionals)
        words += code.split(QRegularExpression("\\s+"), Qt::SkipEmptyParts);
        out.append({where, code, words});
      }
    }
    if (isHeading && !named) section.reset();
  };

  for (int i = 0; i < lines.size(); ++i) {
    const QRegularExpressionMatch f = fence.match(lines[i]);
    if (f.hasMatch()) {
      const QString marker = f.captured(1), language = f.captured(2).toLower();
      // Logical lines: a line ending in `\` continues on the next, and so does a synopsis whose
      // next line is indented and starts with an option or `[`.
      QList<std::pair<int, QString>> logical;
      bool continued = false;
      for (++i; i < lines.size() && !lines[i].trimmed().startsWith(marker); ++i) {
        if (!shells.contains(language)) continue;
        QString l = lines[i].trimmed();
        const bool more = l.endsWith('\\');
        if (more) l.chop(1);
        const bool indented = lines[i].startsWith(' ') && (l.startsWith('[') || l.startsWith('-'));
        if (!logical.isEmpty() && (continued || indented))
          logical.last().second += ' ' + l;
        else
          logical.append({i + 1, l});
        continued = more;
      }
      for (const auto& [at, text] : logical)
        for (const QStringList& c : commandsIn(text))
          out.append({QStringLiteral("%1:%2").arg(file).arg(at), text.simplified(), c});
      continue;
    }
    if (heading.match(lines[i]).hasMatch()) {
      fromSpans(lines[i], i + 1, {0}, true);
      continue;
    }
    if (lines[i].trimmed().isEmpty()) continue;
    // A paragraph (spans may wrap across its lines).
    const int first = i;
    QString paragraph = lines[i];
    QList<int> starts{0};
    while (i + 1 < lines.size() && !lines[i + 1].trimmed().isEmpty() && !heading.match(lines[i + 1]).hasMatch() &&
           !fence.match(lines[i + 1]).hasMatch()) {
      paragraph += ' ';
      starts << static_cast<int>(paragraph.size());
      paragraph += lines[++i];
    }
    fromSpans(paragraph, first + 1, starts, false);
  }
  return out;
}

// Runs a program of ours with `args` and returns what it printed (stdout and stderr), or nullopt
// when it did not exit 0.
std::optional<QString> run(const QString& program, const QStringList& args) {
  static const QHash<QString, QString> paths = {
      {"hap", QStringLiteral(HAP_CLI_PATH)},
      {"hap-worker", QStringLiteral(HAP_WORKER_PATH)},
#ifdef HAP_STUDIO_PATH
      {"hap-studio", QStringLiteral(HAP_STUDIO_PATH)},
#endif
  };
  QProcess p;
  p.setProcessChannelMode(QProcess::MergedChannels);
  p.start(paths.value(program), args);
  if (!p.waitForFinished(60'000)) qFatal("%s %s did not finish", qPrintable(program), qPrintable(args.join(' ')));
  if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) return std::nullopt;
  return QString::fromUtf8(p.readAll());
}

bool built(const QString& program) {
#ifndef HAP_STUDIO_PATH
  if (program == "hap-studio") return false;
#endif
  Q_UNUSED(program);
  return true;
}

// The checker: asks each command's --help once.
class Checker {
 public:
  // The problems with one invocation (none: empty).
  QStringList problems(const Invocation& inv) {
    QStringList out;
    const QString program = inv.words.front();
    if (!built(program)) return out;
    if (help(program, {}).isEmpty()) {
      out << QStringLiteral("%1: `%2 --help` did not run").arg(inv.where, program);
      return out;
    }
    QStringList path{};  // subcommand words after the program
    int i = 1;
    static const QRegularExpression word("^[a-z][a-z0-9-]*$");
    // Subcommands: `hap` only (hap-worker and hap-studio take none).
    if (program == "hap") {
      while (i < inv.words.size()) {
        const QString w = bare(inv.words[i]);
        if (w.startsWith('-') || w.isEmpty()) break;
        if (!word.match(w).hasMatch()) {
          if (path.isEmpty() && w.toUpper() == w && w.contains(QRegularExpression("[A-Z]")))
            return out;  // a placeholder: `hap SUBCOMMAND --help`
          break;  // a positional (a file)
        }
        if (!isSubcommand(program, path, w)) {
          if (path.isEmpty()) {
            out << QStringLiteral("%1: `%2`: hap has no command '%3' (hap --help)").arg(inv.where, inv.text, w);
            return out;
          }
          break;  // a positional of the subcommand
        }
        path << w;
        ++i;
      }
    }
    QString target = program;
    QStringList targetPath = path;
    for (; i < inv.words.size(); ++i) {
      const QString w = inv.words[i];
      if (w == "--" || w == "[--") {
        if (program == "hap" && path == QStringList{"launch"}) {
          target = "hap-worker";  // hap launch PLAN -- WORKER-ARGS
          targetPath.clear();
          continue;
        }
        break;
      }
      for (const QString& alternative : bare(w).split('|')) {  // `[--json|--csv]`
        const QString name = optionName(bare(alternative));
        if (name.isEmpty() || lists(target, targetPath, name)) continue;
        const QString command = (QStringList{target} + targetPath).join(' ');
        out << QStringLiteral("%1: `%2`: %3 has no option %4 (%3 --help)").arg(inv.where, inv.text, command, name);
      }
    }
    return out;
  }

 private:
  QString help(const QString& program, const QStringList& path) {
    const QString key = (QStringList{program} + path).join(' ');
    if (!helps_.contains(key)) helps_.insert(key, run(program, path + QStringList{"--help"}).value_or(QString()));
    return helps_.value(key);
  }

  // `program path... w --help` succeeds and its usage line names `w` after the parent's words.
  bool isSubcommand(const QString& program, const QStringList& path, const QString& w) {
    static const QRegularExpression usageLine("(?im)^\\s*usage:\\s*(.*)$");
    const QRegularExpressionMatch m = usageLine.match(help(program, path + QStringList{w}));
    if (!m.hasMatch()) return false;
    const QStringList words = m.captured(1).split(' ', Qt::SkipEmptyParts);
    return words.contains(w);
  }

  // The option is in the help of the command or of a parent below the program's root (CLI11's
  // fallthrough: `hap runs show 3 --json`).
  bool lists(const QString& program, const QStringList& path, const QString& option) {
    const QRegularExpression re(QStringLiteral("(^|[\\s,\\[])%1(?![a-z0-9-])").arg(QRegularExpression::escape(option)));
    for (int depth = path.size(); depth >= (path.isEmpty() ? 0 : 1); --depth)
      if (re.match(help(program, path.mid(0, depth))).hasMatch()) return true;
    return false;
  }

  QHash<QString, QString> helps_;
};

QString sourceDir() {
  const QString env = qEnvironmentVariable("HAP_SOURCE_DIR");
  return env.isEmpty() ? QStringLiteral(HAP_SOURCE_ROOT) : env;
}

// README.md and docs/*.md, relative name and text.
QList<std::pair<QString, QString>> docs() {
  QList<std::pair<QString, QString>> out;
  QStringList names{"README.md"};
  for (const QString& f : QDir(sourceDir() + "/docs").entryList({"*.md"}, QDir::Files, QDir::Name))
    names << "docs/" + f;
  for (const QString& name : names) {
    QFile f(sourceDir() + "/" + name);
    if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", qPrintable(f.fileName()));
    out.append({name, QString::fromUtf8(f.readAll())});
  }
  return out;
}

}  // namespace

class TstDocsOptions : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  // The scanner: ours are found, other tools' command lines are not.
  void scannerFindsOnlyOurCommands() {
    const QString md =
        "Run `hap plan m.pt --cluster c.yaml -o p.json` or `cmake --build build --target hap`.\n"
        "\n"
        "```sh\n"
        "ctest --output-on-failure -R tst_cli\n"
        "/usr/bin/python3 resources/models/export.py --all --preset tiny --out build/zoo\n"
        "xvfb-run -a build/app/studio/hap-studio --screenshot s.png  # a picture\n"
        "build/app/cli/hap launch p.json --local --steps 5 -- --data tokens \\\n"
        "    --lr 0.1 | tee log.txt\n"
        "HAP_DB=x.db time build/app/cli/hap runs show 3 --json && farm-bench --fast\n"
        "hap simulate PLAN.json [--trace F]\n"
        "             [--report F] --model M\n"
        "```\n"
        "\n"
        "### `hap inspect MODEL.pt [--depth N]`\n"
        "\n"
        "- `--json` prints JSON; `--shape-only` is export.py's, written `export.py --shape-only`.\n"
        "\n"
        "## Other\n"
        "\n"
        "`--json` here belongs to no command.\n";
    const QList<Invocation> found = scan("x.md", md);
    QStringList got;
    for (const Invocation& inv : found) got << inv.where + " " + inv.words.join(' ');
    const QStringList expected = {
        "x.md:1 hap plan m.pt --cluster c.yaml -o p.json",
        "x.md:6 hap-studio --screenshot s.png",
        "x.md:7 hap launch p.json --local --steps 5 -- --data tokens --lr 0.1",
        "x.md:9 hap runs show 3 --json",
        "x.md:10 hap simulate PLAN.json [--trace F] [--report F] --model M",
        "x.md:14 hap inspect MODEL.pt [--depth N]",
        "x.md:16 hap inspect MODEL.pt --json",
        "x.md:16 hap inspect MODEL.pt --shape-only",
    };
    QCOMPARE(got, expected);
  }

  // A made-up option and a made-up command are reported; real ones, the worker's options after
  // `hap launch ... --` and a parent's option after `hap runs show` are not.
  void aMadeUpOptionIsReported() {
    Checker checker;
    const QString md =
        "`hap plan m.pt --cluster c.yaml --frobnicate`, `hap plans m.pt`, `hap runs show 3 --json`,\n"
        "`hap runs [--json|--yaml]`,\n"
        "`hap launch p.json --local -- --lr 0.1 --no-such-worker-option`, `hap-worker p.json --check`.\n";
    QStringList problems;
    for (const Invocation& inv : scan("x.md", md)) problems += checker.problems(inv);
    QCOMPARE(problems.size(), 4);
    QVERIFY2(problems[0].contains("hap plan has no option --frobnicate"), qPrintable(problems[0]));
    QVERIFY2(problems[1].contains("hap has no command 'plans'"), qPrintable(problems[1]));
    QVERIFY2(problems[2].contains("hap runs has no option --yaml"), qPrintable(problems[2]));
    QVERIFY2(problems[3].contains("hap-worker has no option --no-such-worker-option"), qPrintable(problems[3]));
  }

  // The docs themselves.
  void docsNameOnlyRealCommandsAndOptions() {
    Checker checker;
    QStringList problems;
    int checked = 0, skipped = 0;
    for (const auto& [name, text] : docs())
      for (const Invocation& inv : scan(name, text)) {
        if (!built(inv.words.front())) {
          ++skipped;
          continue;
        }
        ++checked;
        problems += checker.problems(inv);
      }
    qInfo("%d invocations checked, %d of hap-studio skipped (not built)", checked, skipped);
    QVERIFY2(checked >= 30, "too few invocations found: is the scanner broken?");
    QVERIFY2(problems.isEmpty(), qPrintable("\n" + problems.join('\n')));
  }
};

QTEST_GUILESS_MAIN(TstDocsOptions)
#include "tst_docs_options.moc"

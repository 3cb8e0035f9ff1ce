// The base room: outputs written atomically, the clean-up of a killed writer's
// temporaries, HTML escaping.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "autoreg/base/atomic_file.h"
#include "autoreg/base/csv.h"
#include "autoreg/base/errors.h"
#include "autoreg/base/html.h"
#include "autoreg/base/names.h"
#include "autoreg/base/number_text.h"
#include "autoreg/base/schema.h"

namespace fs = std::filesystem;
using namespace autoreg::base;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path fresh_folder(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("autoreg_base_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

size_t entries(const fs::path& dir) {
  return size_t(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}

// A process id that is certainly gone: a child that has exited and been reaped.
pid_t ended_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  return child;
}

// temporary_path's name with another process id in it.
std::string temporary_of(const fs::path& dir, const std::string& name, pid_t pid) {
  std::string tmp = fs::path(temporary_path((dir / name).string())).filename().string();
  const std::string own = "-" + std::to_string(::getpid()) + "-";
  tmp.replace(tmp.find(own), own.size(), "-" + std::to_string(pid) + "-");
  return tmp;
}

// Last written an hour ago.
void age(const fs::path& p) { fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::hours(1)); }

}  // namespace

TEST(AtomicFile, WritesTheWholeFileUnderItsName) {
  const fs::path dir = fresh_folder("write");
  write_file_atomically((dir / "a.txt").string(), "hello\n");
  EXPECT_EQ(read(dir / "a.txt"), "hello\n");
  write_file_atomically((dir / "a.txt").string(), "again\n");  // replaces
  EXPECT_EQ(read(dir / "a.txt"), "again\n");
  EXPECT_EQ(entries(dir), 1u);  // no temporary left
  fs::remove_all(dir);
}

TEST(AtomicFile, AFailedWriteLeavesTheOldFileAndNoTemporary) {
  const fs::path dir = fresh_folder("fail");
  write_file_atomically((dir / "a.txt").string(), "old\n");
  std::string seen;
  EXPECT_THROW(write_atomically((dir / "a.txt").string(),
                                [&](const std::string& tmp) {
                                  seen = tmp;
                                  std::ofstream(tmp) << "half";
                                  throw std::invalid_argument("disk on fire");
                                }),
               std::invalid_argument);  // the writer's own exception, unchanged
  EXPECT_EQ(read(dir / "a.txt"), "old\n");
  EXPECT_FALSE(fs::exists(seen));
  EXPECT_EQ(entries(dir), 1u);
  // The temporary sits beside the output and ends in its name (writers choose the format
  // by the extension).
  EXPECT_EQ(fs::path(seen).parent_path(), dir);
  EXPECT_EQ(seen.substr(seen.size() - 6), "-a.txt");
  fs::remove_all(dir);
}

TEST(AtomicFile, AFolderWrittenAsATemporaryIsRemovedOnFailure) {
  const fs::path dir = fresh_folder("folder");
  EXPECT_THROW(write_atomically((dir / "pair.mhd").string(),
                                [&](const std::string& tmp) {
                                  fs::create_directory(tmp);
                                  std::ofstream(fs::path(tmp) / "pair.raw") << "voxels";
                                  throw std::runtime_error("stop");
                                }),
               std::runtime_error);
  EXPECT_EQ(entries(dir), 0u);
  fs::remove_all(dir);
}

TEST(AtomicFile, AnUnwritableFolderIsAWriteErrorNamingTheFile) {
  const std::string path = "/nonexistent_autoreg_folder/a.txt";
  try {
    write_file_atomically(path, "x");
    FAIL() << "no error";
  } catch (const WriteError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST(AtomicFile, TemporariesOfEndedProcessesAreRemovedOthersKept) {
  const fs::path dir = fresh_folder("stale");
  const std::string dead = temporary_of(dir, "field.nii.gz", ended_pid());
  const std::string dead_but_recent = temporary_of(dir, "labels.nii.gz", ended_pid());
  const std::string alive = temporary_of(dir, "warped.nii.gz", ::getppid());
  const std::string other_host = ".autoreg-tmp-someotherhost-" + std::to_string(ended_pid()) + "-0-x.nii.gz";
  std::ofstream(dir / dead) << "partial";
  std::ofstream(dir / dead_but_recent) << "perhaps another PID namespace's, still writing";
  std::ofstream(dir / ".autoreg-notes") << "not a temporary";
  std::ofstream(dir / alive) << "in progress";
  std::ofstream(dir / other_host) << "another machine's";
  std::ofstream(dir / "result.nii.gz") << "an output";
  for (const std::string& old : {dead, alive, other_host, std::string(".autoreg-notes"), std::string("result.nii.gz")}) {
    age(dir / old);
  }
  EXPECT_EQ(remove_stale_temporaries(dir.string()), 1);
  EXPECT_FALSE(fs::exists(dir / dead));
  EXPECT_TRUE(fs::exists(dir / dead_but_recent));
  EXPECT_TRUE(fs::exists(dir / alive));
  EXPECT_TRUE(fs::exists(dir / other_host));
  EXPECT_TRUE(fs::exists(dir / "result.nii.gz"));
  EXPECT_TRUE(fs::exists(dir / ".autoreg-notes"));
  fs::remove_all(dir);
}

TEST(AtomicFile, TheFirstWriteIntoAFolderCleansIt) {
  const fs::path dir = fresh_folder("first");
  const std::string dead = temporary_of(dir, "model.autoreg", ended_pid());
  fs::create_directory(dir / dead);  // a killed .mhd writer's folder
  std::ofstream(dir / dead / "x.raw") << "partial";
  age(dir / dead);
  write_file_atomically((dir / "summary.json").string(), "{}\n");
  EXPECT_FALSE(fs::exists(dir / dead));
  EXPECT_TRUE(fs::exists(dir / "summary.json"));
  fs::remove_all(dir);
}

TEST(Html, EscapesTheFiveMarkupCharacters) {
  EXPECT_EQ(escape_html("a<b> & \"c\" 'd'"), "a&lt;b&gt; &amp; &quot;c&quot; &#39;d&#39;");
  EXPECT_EQ(escape_html("plain text, é"), "plain text, é");
  EXPECT_EQ(escape_html(""), "");
}

// An enum's one name table: parsed, named and listed from the same entries; a name it
// does not know is the given error naming the choice and the names allowed.
enum class Colour { Red, Green, Blue };
constexpr autoreg::base::NameTable<Colour, 3> kColours{"--colour", {{{Colour::Red, "red"}, {Colour::Green, "green"}, {Colour::Blue, "blue"}}}};

TEST(NameTable, ParsesNamesAndListsFromOneTable) {
  EXPECT_EQ(kColours.parse("green"), Colour::Green);
  EXPECT_STREQ(kColours.name(Colour::Blue), "blue");
  EXPECT_EQ(kColours.names(), (std::vector<std::string>{"red", "green", "blue"}));
  EXPECT_EQ(kColours.joined(), "red|green|blue");
  EXPECT_TRUE(kColours.contains("red"));
  EXPECT_FALSE(kColours.contains("Red"));
  for (Colour c : {Colour::Red, Colour::Green, Colour::Blue}) EXPECT_EQ(kColours.parse(kColours.name(c)), c);
  try {
    kColours.parse("purple");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--colour must be 'red', 'green' or 'blue', got 'purple'");
  }
  EXPECT_THROW(kColours.parse<autoreg::base::UsageError>("purple"), autoreg::base::UsageError);
}

TEST(Csv, QuotesOnlyWhatNeedsIt) {
  using autoreg::base::csv_field;
  EXPECT_EQ(csv_field("LUNG_L"), "LUNG_L");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two lines\"");
}

// Numbers are written as the shortest text that reads back to the same double.
TEST(NumberText, ShortestTextThatReadsBack) {
  using autoreg::base::exact_text;
  EXPECT_EQ(exact_text(0.6), "0.6");
  EXPECT_EQ(exact_text(1e-5), "1e-05");
  for (double v : {0.6, 1e-5, 0.1 + 0.2, 1.0 / 3.0, 2.0, -0.25, 6e23}) EXPECT_EQ(std::strtod(exact_text(v).c_str(), nullptr), v);
  EXPECT_EQ(exact_text(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(exact_text(2.0), "2");
}

// A schema's rows: choices read through their name table, unset optional settings are
// not written, every row reads back what `arguments` writes, and a value a row does not
// read names its option.
struct Knobs {
  std::string name;
  Colour colour = Colour::Red;
  std::optional<int64_t> steps;
  std::optional<double> budget;
  bool quiet = false;
  bool augment = true;
  double rate = 0.6;
};

TEST(Schema, RowsWriteAndReadBackTheSettings) {
  namespace b = autoreg::base;
  const b::Schema<Knobs> schema{b::text_field<Knobs>("name", "name", "TEXT", "a name", &Knobs::name),
                                b::choice_field<Knobs>("colour", "colour", "a colour", kColours, &Knobs::colour),
                                b::optional_field<Knobs>("steps", "steps", "N", "steps", &Knobs::steps, 1),
                                b::optional_field<Knobs>("budget", "budget", "T", "minutes", &Knobs::budget),
                                b::switch_field<Knobs>("quiet", "quiet", "say less", &Knobs::quiet),
                                b::off_switch_field<Knobs>("augment", "no-augment", "no augmentation", &Knobs::augment),
                                b::number_field<Knobs>("rate", "rate", "R", "a rate", &Knobs::rate)};
  EXPECT_EQ(schema[1].value_name, "red|green|blue");
  EXPECT_EQ(b::arguments("job", schema, Knobs{}), (std::vector<std::string>{"job", "--colour", "red", "--rate", "0.6"}));
  Knobs k;
  k.name = "a b";
  k.colour = Colour::Blue;
  k.steps = 7;
  k.budget = 0.1 + 0.2;
  k.quiet = true;
  k.augment = false;
  const std::vector<std::string> words = b::arguments("job", schema, k);
  Knobs back;
  for (size_t i = 1; i < words.size(); ++i) {
    for (const auto& row : schema) {
      if ("--" + row.option == words[i]) row.set(back, row.switch_option() ? row.switch_sets : words[++i]);
    }
  }
  EXPECT_EQ(b::arguments("job", schema, back), words);
  EXPECT_EQ(back.colour, Colour::Blue);
  EXPECT_EQ(*back.steps, 7);
  EXPECT_EQ(*back.budget, 0.1 + 0.2);
  EXPECT_FALSE(back.augment);
  const auto refused = [&](size_t row, const std::string& text) {
    try {
      schema[row].set(back, text);
    } catch (const autoreg::base::UsageError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(refused(1, "purple"), "--colour must be 'red', 'green' or 'blue', got 'purple'");
  EXPECT_EQ(refused(2, "0"), "--steps must be a whole number of at least 1, got '0'");
  EXPECT_EQ(refused(3, "soon"), "--budget must be a number, got 'soon'");
}

TEST(DeviceNames, CpuAndCudaFromOneTable) {
  EXPECT_EQ(autoreg::base::kDeviceNames.joined(), "cpu|cuda");
  EXPECT_THROW(autoreg::base::kDeviceNames.parse("gpu"), std::invalid_argument);
}

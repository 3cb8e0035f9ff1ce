// A training dataset described by a CSV manifest:
//
//   image,labels,split
//   subjects/s01_t1.nii.gz,subjects/s01_aseg.nii.gz,train
//   ,synth/seg_02.nii.gz,train          # labels only: images are synthesised from them
//   subjects/s03_t1.nii.gz,,val
//   atlas/t1.nii.gz,atlas/aseg.nii.gz,atlas
//
// A header line names the columns: `image` is required, `labels` and `split` are
// optional, in any order. Paths are relative to the manifest's folder (absolute ones are
// kept). split: train (the default when empty or absent), val, test (ignored by
// training) or atlas (at most one row: atlas mode). A row needs an image or a label map.
// Fields may be double-quoted; empty lines and lines starting with '#' are skipped.
#pragma once

#include <string>
#include <vector>

namespace autoreg::io {

struct ManifestRow {
  std::string image;   // absolute or relative to the working folder; "" = none
  std::string labels;  // "" = none
  std::string split;   // train, val, test or atlas
  int line = 0;        // in the manifest, for messages
};

struct Manifest {
  std::string path;
  std::vector<ManifestRow> rows;
  // The rows of one split.
  std::vector<ManifestRow> split(const std::string& name) const;
};

// Throws IoError naming the file and line: unreadable file, no `image` column, a row
// with the wrong number of fields, an unknown split, two atlases, a row with neither
// image nor labels, a listed file that does not exist.
Manifest read_manifest(const std::string& path);

// A CSV file with a header line naming its columns, read as the manifest is: fields may
// be double-quoted (a "" inside is a quote), surrounding blanks are trimmed, empty lines
// and lines starting with '#' are skipped.
struct CsvRow {
  std::vector<std::string> fields;  // in the order of `columns` given to read_csv ("" when absent)
  int line = 0;
};
// Throws IoError naming the file and line: unreadable, no header, a column not in
// `columns`, a column twice, a `required` column missing, a row with the wrong number of
// fields. `kind` names the file in messages ("cannot open the <kind>").
std::vector<CsvRow> read_csv(const std::string& path, const std::vector<std::string>& columns,
                             const std::vector<std::string>& required, const std::string& kind = "file");

// `field` as a path: relative ones are taken from `csv`'s folder; "" stays "".
std::string path_beside(const std::string& csv, const std::string& field);

}  // namespace autoreg::io

// DCMTK behind rt/'s plain structs: loading a file, reading a value as text or numbers,
// writing one. Internal: no DCMTK header reaches rt/'s public headers.
#pragma once

#include <dcmtk/config/osconfig.h>  // first, as DCMTK asks
#include <dcmtk/dcmdata/dcfilefo.h>
#include <dcmtk/dcmdata/dcitem.h>
#include <dcmtk/dcmdata/dcsequen.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autoreg/rt/series.h"

namespace autoreg::rt::detail {

// Throws DicomError "<file>: <what>".
[[noreturn]] void fail(const std::string& file, const std::string& what);

// Loads a DICOM file (Part 10 with file meta, or a bare data set). `headers_only` stops
// before the pixel data, which is then never read. DicomError when the file cannot be
// parsed or DCMTK's data dictionary is missing (values would read as unknown VRs).
std::unique_ptr<DcmFileFormat> load(const std::string& path, bool headers_only);

// True when the file has a DICOM Part 10 preamble ("DICM" at byte 128).
bool has_dicom_preamble(const std::string& path);

// The element's whole value as text (all values, backslash-separated), padding trimmed;
// "" when absent or empty.
std::string text(DcmItem& item, const DcmTagKey& tag);

// The element's values as numbers (DS, IS or a binary VR). Empty when absent. A value
// that is malformed or not finite throws DicomError "<file>: <what>: ...".
std::vector<double> numbers(DcmItem& item, const DcmTagKey& tag, const std::string& file, const std::string& what);

// The sequence, or nullptr when absent.
DcmSequenceOfItems* sequence(DcmItem& item, const DcmTagKey& tag);

// Sets an element (replacing it); std::runtime_error when DCMTK refuses the value.
void put(DcmItem& item, const DcmTagKey& tag, const std::string& value);

// The Patient and General Study modules of `on` (and its character set), so that a new
// object files under the series' patient and study.
void put_patient_study(DcmItem& item, const DicomSeries& on);

// Appends a new item to the sequence `tag` of `item` (creating the sequence).
DcmItem& append_item(DcmItem& item, const DcmTagKey& tag);

// Adds an empty sequence `tag` to `item` (for type 2 sequences with no item).
void put_empty_sequence(DcmItem& item, const DcmTagKey& tag);

// A number as a DS value: at most 16 characters, up to 10 significant digits, no
// locale ("-123.4567891", "1.5e-07").
std::string format_ds(double value);

// A new UID under DCMTK's site root for instances (or series).
std::string new_uid(bool series);

// DA and TM of now, local time (what a planning system shows).
std::pair<std::string, std::string> date_and_time();

// A value cut to its VR's length (LO 64, SH 16, ST 1024).
inline std::string at_most(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n); }

}  // namespace autoreg::rt::detail

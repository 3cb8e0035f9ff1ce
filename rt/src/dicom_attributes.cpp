#include "dicom_attributes.h"

#include <dcmtk/config/osconfig.h>  // first, as DCMTK asks
#include <dcmtk/dcmdata/dcdeftag.h>
#include <dcmtk/dcmdata/dcdict.h>
#include <dcmtk/dcmdata/dcuid.h>
#include <dcmtk/oflog/oflog.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
#include <stdexcept>

#include "autoreg/rt/errors.h"

namespace autoreg::rt::detail {

void fail(const std::string& file, const std::string& what) { throw DicomError(file + ": " + what); }

std::unique_ptr<DcmFileFormat> load(const std::string& path, bool headers_only) {
  // dcmdata logs to stderr: a warning for every file read up to its pixel data, errors
  // for files that are not DICOM (skipped, or refused with DCMTK's reason in our message).
  static std::once_flag quiet;
  std::call_once(quiet, [] { OFLog::getLogger("dcmtk.dcmdata").setLogLevel(OFLogger::FATAL_LOG_LEVEL); });
  if (!dcmDataDict.isDictionaryLoaded())
    fail(path, "DCMTK's data dictionary is not loaded (install libdcmtk17's dicom.dic, or set DCMDICTPATH)");
  auto file = std::make_unique<DcmFileFormat>();
  const OFCondition status =
      headers_only ? file->loadFileUntilTag(path.c_str(), EXS_Unknown, EGL_noChange, DCM_MaxReadLength,
                                            ERM_autoDetect, DCM_PixelData)
                   : file->loadFile(path.c_str());
  if (status.bad()) fail(path, std::string("cannot be read as DICOM (") + status.text() + ")");
  return file;
}

bool has_dicom_preamble(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[132] = {};
  return in.read(head, sizeof head) && std::memcmp(head + 128, "DICM", 4) == 0;
}

namespace {

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  // Trailing NUL is UI's padding.
  const auto last = s.find_last_not_of(std::string(" \t\r\n\0", 5));
  return s.substr(first, last - first + 1);
}

}  // namespace

std::string text(DcmItem& item, const DcmTagKey& tag) {
  OFString value;
  if (item.findAndGetOFStringArray(tag, value).bad()) return "";
  return trim(value.c_str());
}

std::vector<double> numbers(DcmItem& item, const DcmTagKey& tag, const std::string& file, const std::string& what) {
  DcmElement* element = nullptr;
  std::vector<double> out;
  if (item.findAndGetElement(tag, element).bad() || element == nullptr || element->getLength() == 0) return out;
  const DcmEVR vr = element->ident();
  if (vr != EVR_DS && vr != EVR_IS) {  // binary (US, FD, ...): DCMTK converts
    for (unsigned long i = 0; i < element->getVM(); ++i) {
      Float64 v = 0;
      if (item.findAndGetFloat64(tag, v, i).bad()) {
        Uint16 u = 0;
        if (item.findAndGetUint16(tag, u, i).bad()) fail(file, what + ": value " + std::to_string(i + 1) + " unreadable");
        v = u;
      }
      out.push_back(v);
    }
    return out;
  }
  // DS/IS parsed here, once (DCMTK's per-value getter rescans the string: quadratic on
  // ContourData), with from_chars: no locale.
  OFString all;
  element->getOFStringArray(all, /*normalize=*/OFFalse);  // normalising is per value: quadratic too
  const std::string s = all.c_str();
  size_t start = 0;
  for (size_t index = 1;; ++index) {
    const size_t end = std::min(s.find('\\', start), s.size());
    std::string token = trim(s.substr(start, end - start));
    if (!token.empty() && token[0] == '+') token.erase(0, 1);
    double v = 0;
    const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
    if (token.empty() || ec != std::errc() || ptr != token.data() + token.size())
      fail(file, what + ": value " + std::to_string(index) + " '" + token + "' is not a number");
    if (!std::isfinite(v)) fail(file, what + ": value " + std::to_string(index) + " '" + token + "' is not finite");
    out.push_back(v);
    if (end == s.size()) break;
    start = end + 1;
  }
  return out;
}

DcmSequenceOfItems* sequence(DcmItem& item, const DcmTagKey& tag) {
  DcmSequenceOfItems* seq = nullptr;
  if (item.findAndGetSequence(tag, seq).bad()) return nullptr;
  return seq;
}

void put(DcmItem& item, const DcmTagKey& tag, const std::string& value) {
  const OFCondition status = item.putAndInsertString(tag, value.c_str());
  if (status.bad())
    throw std::runtime_error("cannot set DICOM element " + std::string(DcmTag(tag).getTagName()) + " to '" +
                             value + "': " + status.text());
}

void put_patient_study(DcmItem& d, const DicomSeries& on) {
  const PatientStudy& p = on.patient;
  if (!p.specific_character_set.empty()) put(d, DCM_SpecificCharacterSet, p.specific_character_set);
  put(d, DCM_PatientName, p.patient_name);
  put(d, DCM_PatientID, p.patient_id);
  put(d, DCM_PatientBirthDate, p.patient_birth_date);
  put(d, DCM_PatientSex, p.patient_sex);
  put(d, DCM_StudyInstanceUID, on.study_uid);
  put(d, DCM_StudyDate, p.study_date);
  put(d, DCM_StudyTime, p.study_time);
  put(d, DCM_StudyID, p.study_id);
  put(d, DCM_AccessionNumber, p.accession_number);
  put(d, DCM_ReferringPhysicianName, p.referring_physician_name);
  if (!p.study_description.empty()) put(d, DCM_StudyDescription, p.study_description);
}

DcmItem& append_item(DcmItem& item, const DcmTagKey& tag) {
  DcmItem* added = nullptr;
  const OFCondition status = item.findOrCreateSequenceItem(tag, added, -2);
  if (status.bad() || added == nullptr)
    throw std::runtime_error("cannot add an item to DICOM sequence " + std::string(DcmTag(tag).getTagName()));
  return *added;
}

void put_empty_sequence(DcmItem& item, const DcmTagKey& tag) {
  if (item.insertEmptyElement(tag).bad())
    throw std::runtime_error("cannot add DICOM sequence " + std::string(DcmTag(tag).getTagName()));
}

std::string format_ds(double value) {
  if (std::fabs(value) < 1e-9) value = 0;  // interpolation noise, not "1.2e-13"
  char buffer[32];
  for (int digits = 10; digits > 0; --digits) {
    const auto [ptr, ec] = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::general, digits);
    if (ec == std::errc() && ptr - buffer <= 16) return std::string(buffer, ptr);
  }
  throw std::invalid_argument("format_ds: cannot write " + std::to_string(value) + " in 16 characters");
}

std::string new_uid(bool series) {
  char uid[100];
  dcmGenerateUniqueIdentifier(uid, series ? SITE_SERIES_UID_ROOT : SITE_INSTANCE_UID_ROOT);
  return uid;
}

std::pair<std::string, std::string> date_and_time() {
  const std::time_t t = std::time(nullptr);
  std::tm local{};
  localtime_r(&t, &local);
  char date[16], time[16];
  std::strftime(date, sizeof date, "%Y%m%d", &local);
  std::strftime(time, sizeof time, "%H%M%S", &local);
  return {date, time};
}

}  // namespace autoreg::rt::detail

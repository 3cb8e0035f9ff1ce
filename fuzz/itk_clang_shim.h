// Debian's ITK 5.2 ships compiler information for GCC alone: its itk_compiler_detection.h
// stops clang with "#error Unsupported compiler". The fuzz build (clang, libFuzzer)
// includes this file first in every translation unit (-include): where ITK's headers are
// on the include path, it reads ITK's detection header once with clang presented as the
// GCC it is compatible with (GCC 12's C++ features, all of which clang 14 has), and
// restores the macros; the header's include guard then keeps ITK from reading it again.
#if defined(__clang__) && defined(__cplusplus) && __has_include(<itk_compiler_detection.h>)
#pragma push_macro("__clang__")
#pragma push_macro("__GNUC__")
#pragma push_macro("__GNUC_MINOR__")
#pragma push_macro("__GNUC_PATCHLEVEL__")
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wbuiltin-macro-redefined"
#undef __clang__
#undef __GNUC__
#undef __GNUC_MINOR__
#undef __GNUC_PATCHLEVEL__
#define __GNUC__ 12
#define __GNUC_MINOR__ 2
#define __GNUC_PATCHLEVEL__ 0
#include <itk_compiler_detection.h>
#pragma clang diagnostic pop
#pragma pop_macro("__GNUC_PATCHLEVEL__")
#pragma pop_macro("__GNUC_MINOR__")
#pragma pop_macro("__GNUC__")
#pragma pop_macro("__clang__")
#endif

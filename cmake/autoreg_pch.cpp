// The translation unit that builds cmake/autoreg_pch.h precompiled (AutoregPch.cmake).

# cflow_set_warnings(target): the project's warning set; -Werror under CFLOW_WARNINGS_AS_ERRORS (CI).
function(cflow_set_warnings target)
  if(MSVC)
    target_compile_options(${target} PRIVATE /W4)
    if(CFLOW_WARNINGS_AS_ERRORS)
      target_compile_options(${target} PRIVATE /WX)
    endif()
  else()
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow=local -Wno-missing-field-initializers)
    if(CFLOW_WARNINGS_AS_ERRORS)
      target_compile_options(${target} PRIVATE -Werror)
      if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
        # GCC 12 at -O2/-O3 reports these from inside libstdc++'s own std::string / std::vector
        # code (GCC bugs 105329, 105651, 106199): kept visible as warnings, not build failures.
        target_compile_options(${target} PRIVATE -Wno-error=restrict -Wno-error=stringop-overflow
                                                 -Wno-error=maybe-uninitialized -Wno-error=array-bounds)
      endif()
    endif()
  endif()
endfunction()

# cflow_isa_flags(source isa): per-file ISA flags for a run-time dispatched kernel.
function(cflow_isa_flags source isa)
  if(MSVC)
    return()
  endif()
  if(isa STREQUAL "avx2")
    set(flags "-mavx2;-mfma;-mf16c")
  elseif(isa STREQUAL "avx512")
    set(flags "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx2;-mfma;-mf16c")
  elseif(isa STREQUAL "avx512vnni")
    set(flags "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mavx2;-mfma;-mf16c")
  endif()
  if(MINGW)
    # GCC bug 54412: mingw-w64 cannot align the stack for 32/64-byte spills; make the assembler emit unaligned moves.
    list(APPEND flags "-Wa,-muse-unaligned-vector-move")
  endif()
  set_source_files_properties(${source} PROPERTIES COMPILE_OPTIONS "${flags}")
endfunction()

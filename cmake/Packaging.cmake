# `cpack -G DEB` (in the build folder): one Debian package with kvscope and kvscope-cli, the
# presets and stories, the desktop file, the AppStream metainfo and the icon. Depends comes
# from dpkg-shlibdeps (dpkg-dev) reading the installed binaries.
set(CPACK_PACKAGE_NAME kvscope)
set(CPACK_PACKAGE_VENDOR kvscope)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
       "kvscope computes what an LLM's KV cache costs on a GPU (MHA, MQA, GQA, MLA): bytes per\n"
       "token, the engine's pool, tokens and concurrent requests held, and the decode roofline.\n"
       "kvscope-cli prints the same numbers for scripts.")
set(CPACK_PACKAGE_CONTACT "kvscope maintainers <kvscope@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Only the runtime goes in: no target installs tests or the static libraries.
include(CPack)

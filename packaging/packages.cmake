# The three packages of one install tree (bin/reasonix-mcp, share/reasonix-mcp/lua), whose version
# is the project's: a Debian .deb (under /usr), a relocatable tarball, and an npm package carrying
# the native binary (docs/install.md). `cmake --build build --target packages` writes them to
# build/packages/; the binary finds its Lua tree at <its real dir>/../share/reasonix-mcp/lua.

execute_process(COMMAND dpkg --print-architecture OUTPUT_VARIABLE RMCP_DEB_ARCH OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE dpkg_failed)
if(dpkg_failed)
  set(RMCP_DEB_ARCH unknown)
endif()
# npm's names for this machine (its "os" and "cpu" fields)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64)$")
  set(RMCP_NPM_CPU x64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  set(RMCP_NPM_CPU arm64)
else()
  set(RMCP_NPM_CPU ${CMAKE_SYSTEM_PROCESSOR})
endif()
set(RMCP_PACKAGES_DIR ${CMAKE_BINARY_DIR}/packages)
set(RMCP_TARBALL_NAME reasonix-mcp-${PROJECT_VERSION}-linux-${RMCP_NPM_CPU})
set(RMCP_DEB_NAME reasonix-mcp_${PROJECT_VERSION}_${RMCP_DEB_ARCH}.deb)

set(CPACK_PACKAGE_NAME reasonix-mcp)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "reasonix-mcp developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "MCP server that runs a fleet of ACP coding agents")
set(CPACK_PACKAGE_DESCRIPTION "reasonix-mcp lets an MCP host (Claude Code, Codex, ...) start, steer and\
 watch many coding agents at once through a background daemon, with Lua policies.")
set(CPACK_GENERATOR DEB TGZ)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_FILE_NAME ${RMCP_TARBALL_NAME})
set(CPACK_INCLUDE_TOPLEVEL_DIRECTORY ON)
set(CPACK_DEBIAN_FILE_NAME ${RMCP_DEB_NAME})
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# What it runs besides libc (found by shlibdeps): git for isolate=worktree and the sandbox's git
# handling, bwrap for sandbox=workspace|strict, the zoneinfo that routines are scheduled in.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "git, bubblewrap, tzdata")
include(CPack)

# The agent the npm package brings along (npx installs it beside us; config.agent_beside finds it),
# at the version lua/rmcp/config.lua pins.
file(STRINGS ${CMAKE_SOURCE_DIR}/lua/rmcp/config.lua agent_pin REGEX "^M.AGENT_PACKAGE = \"reasonix@[^\"]+\"$")
string(REGEX REPLACE ".*@([^\"]+)\"$" "\\1" RMCP_AGENT_VERSION "${agent_pin}")
if(NOT RMCP_AGENT_VERSION MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+$")
  message(FATAL_ERROR "no AGENT_PACKAGE pin in lua/rmcp/config.lua: '${agent_pin}'")
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/lua/rmcp/config.lua)
configure_file(${CMAKE_CURRENT_LIST_DIR}/npm/package.json.in ${CMAKE_BINARY_DIR}/npm-package.json @ONLY)
find_program(RMCP_NPM npm)
set(stage ${CMAKE_BINARY_DIR}/npm-stage)
add_custom_target(packages
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${RMCP_PACKAGES_DIR} ${stage}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${RMCP_PACKAGES_DIR}
  COMMAND ${CMAKE_CPACK_COMMAND} --config ${CMAKE_BINARY_DIR}/CPackConfig.cmake -B ${CMAKE_BINARY_DIR}/cpack
  COMMAND ${CMAKE_COMMAND} -E copy ${CMAKE_BINARY_DIR}/cpack/${RMCP_DEB_NAME}
    ${CMAKE_BINARY_DIR}/cpack/${RMCP_TARBALL_NAME}.tar.gz ${RMCP_PACKAGES_DIR}/
  COMMAND ${CMAKE_COMMAND} --install ${CMAKE_BINARY_DIR} --prefix ${stage} --strip
  COMMAND ${CMAKE_COMMAND} -E copy ${CMAKE_BINARY_DIR}/npm-package.json ${stage}/package.json
  COMMAND ${CMAKE_COMMAND} -E copy ${CMAKE_SOURCE_DIR}/README.md ${stage}/README.md
  COMMAND ${RMCP_NPM} pack --pack-destination ${RMCP_PACKAGES_DIR} --loglevel=error --silent ${stage}
  DEPENDS reasonix-mcp-installed
  WORKING_DIRECTORY ${CMAKE_BINARY_DIR}
  COMMENT "Packages (.deb, tarball, npm) in ${RMCP_PACKAGES_DIR}"
  VERBATIM)

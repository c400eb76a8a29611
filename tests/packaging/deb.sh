#!/bin/sh
# The .deb in a fresh Debian 12 root (mmdebstrap's apt variant, no container): installed with apt
# from Debian's archive alone, doctor, MCP, the demo fleet and removal run inside it
# (tests/packaging/deb_root.sh). The root is made once and kept as build/packaging-cache/bookworm.tar
# (delete it for a new one), with the packages apt downloads. Everything runs in its own mount and
# pid namespaces, so no mount and no process outlives the test. usage: deb.sh PACKAGES_DIR
# needs: agent debroot
set -eu
. "$RMCP_SOURCE_DIR/tests/packaging/lib.sh"
deb=$1/reasonix-mcp_${RMCP_VERSION}_$(dpkg --print-architecture).deb
[ -f "$deb" ] || fail "no package $deb"
work=$(mktemp -d "$RMCP_BUILD_DIR/packaging-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
debian_root bookworm.tar
mkdir "$root/pkgtest" "$root/src"
cp "$deb" "$RMCP_SOURCE_DIR/tests/packaging/lib.sh" "$RMCP_SOURCE_DIR/tests/packaging/deb_root.sh" "$root/pkgtest/"
# the pinned agent, a static binary, runs in the root as it is
cp "${REASONIX_BIN:-$RMCP_SOURCE_DIR/.agent/node_modules/@reasonix/cli-linux-x64/bin/reasonix}" "$root/pkgtest/reasonix"
# the root is made a mount point (bwrap needs / to be one), then apt's cache and the source go in
# shellcheck disable=SC2016 # expanded by the inner sh
unshare --mount --pid --fork --mount-proc="$root/proc" sh -c '
  mount --rbind "$2" "$2" &&
  mount --bind "$1/apt-archives" "$2/var/cache/apt/archives" &&
  mount --bind "$3" "$2/src" && mount -o remount,bind,ro "$2/src" &&
  exec chroot "$2" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    RMCP_VERSION="$4" LANG=C.UTF-8 sh /pkgtest/deb_root.sh "/pkgtest/${5##*/}"' \
  deb-root "$cache" "$root" "$RMCP_SOURCE_DIR" "$RMCP_VERSION" "$deb"

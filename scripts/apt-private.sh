# Sourced by scripts/fetch-guest.sh, scripts/fetch-qemu.sh and scripts/build-lane-qemu.sh: a private
# apt configuration in $cache/apt (the machine's own archive, suites trixie, trixie-backports, sid and
# bookworm-backports) through which packages of other Debian releases are downloaded (`apt-get
# download`), never installed. The caller sets $cache and stops on errors (set -e).
#
# `apt_private_setup arm64` makes a second one for arm64 guests (issue 38) in $cache/apt-arm64: arm64
# packages only (APT::Architecture and APT::Architectures), of bookworm too (Debian 12's kernel and the
# busybox-static the x86 guests have), no dpkg status of this machine (nothing of it is installed),
# its .debs in $cache/arm64/debs, so that nothing of an amd64 package's name is ever taken for it.

# Fills the array apt_opts with the private configuration (amd64, default, or @1 arm64), its
# package lists fetched once, and apt_debs with the folder its .debs go to.
apt_private_setup() {
	local arch=${1:-amd64} apt_dir="$cache/apt" uri suite suites="trixie trixie-backports sid bookworm-backports"
	apt_debs="$cache/debs"
	case $arch in
	amd64) ;;
	arm64) apt_dir="$cache/apt-arm64" apt_debs="$cache/arm64/debs" suites="bookworm $suites" ;;
	*) echo "hvtrace: apt_private_setup: architecture $arch is not amd64 or arm64" >&2; exit 1 ;;
	esac
	mkdir -p "$apt_dir/sources.d" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_debs"
	if [ ! -s "$apt_dir/sources.list" ]; then
		# the machine's own archive (its first deb URI), the suites Debian ships newer packages in
		uri=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
		[ -n "$uri" ] || uri=$(sed -n 's/^deb \(\[[^]]*\] *\)\?\([^ ]*\) .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -1)
		uri=${uri:-http://deb.debian.org/debian}
		for suite in $suites; do
			echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main"
		done > "$apt_dir/sources.list.tmp"
		mv "$apt_dir/sources.list.tmp" "$apt_dir/sources.list"
	fi
	apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=$apt_dir/sources.d"
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
		-o Dir::Cache::pkgcache=pkgcache.bin -o Dir::Cache::srcpkgcache=srcpkgcache.bin) # kept: ~20 s less per run
	if [ "$arch" != amd64 ]; then
		: > "$apt_dir/status" # no package of this machine is installed there
		apt_opts+=(-o "APT::Architecture=$arch" -o "APT::Architectures=$arch"
			-o "Dir::State::status=$apt_dir/status")
	fi
	if ! ls "$apt_dir/lists/"*_Packages* >/dev/null 2>&1; then
		apt-get "${apt_opts[@]}" update -qq >/dev/null ||
			{ echo "hvtrace: apt-get update with $apt_dir/sources.list failed" >&2; exit 1; }
	fi
}

# PACKAGE[/SUITE] -> the path of its .deb in $apt_debs (or $cache/kdebs), downloaded with the
# private configuration when it is not there yet (with a suite: the version of that suite).
apt_private_fetch() {
	local pkg=${1%%/*} deb ver=""
	if [ "$pkg" != "$1" ]; then
		ver=$(apt-cache "${apt_opts[@]}" show --no-all-versions "$1" 2>/dev/null | sed -n 's/^Version: //p' | head -1)
		[ -n "$ver" ] || { echo "hvtrace: no package $1 in $cache/apt/sources.list" >&2; exit 1; }
		ver=${ver#*:}_ # no epoch: it is %3a-quoted in the file name
	fi
	deb=$(ls "$apt_debs/${pkg}_"*"$ver"*.deb "$cache/kdebs/${pkg}_"*"$ver"*.deb 2>/dev/null | head -1 || true)
	if [ -z "$deb" ]; then
		(cd "$apt_debs" && apt-get "${apt_opts[@]}" download -q "$1" >/dev/null 2>&1) ||
			{ echo "hvtrace: apt-get download $1 failed" >&2; exit 1; }
		deb=$(ls "$apt_debs/${pkg}_"*"$ver"*.deb | head -1)
	fi
	echo "$deb"
}

# `apt_private_src_setup DIR` (issue 40): fills apt_opts with a source-only configuration in DIR, deb-src
# lines of the machine's own archive and suites (its .sources or sources.list; Debian 12's on our
# machines), for `apt-get source` of the version the machine runs. Its Sources lists fetched once.
apt_private_src_setup() {
	local apt_dir=$1
	mkdir -p "$apt_dir/sources.d" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
	if [ ! -s "$apt_dir/sources.list" ]; then
		{
			# deb822 stanzas: each URI with each suite of its stanza
			awk '/^URIs:/ { u = $2 } /^Suites:/ { for (i = 2; i <= NF; i++) s[n++] = $i }
				/^$/ { for (i = 0; i < n; i++) print u, s[i]; n = 0 }
				END { for (i = 0; i < n; i++) print u, s[i] }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true
			sed -n 's/^deb \(\[[^]]*\] *\)\?\([^ ]*\) \([^ ]*\) .*/\2 \3/p' /etc/apt/sources.list 2>/dev/null || true
		} | sort -u | while read -r uri suite; do
			echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main"
		done > "$apt_dir/sources.list.tmp"
		[ -s "$apt_dir/sources.list.tmp" ] ||
			{ echo "hvtrace: no deb line in the machine's apt sources for $apt_dir" >&2; exit 1; }
		mv "$apt_dir/sources.list.tmp" "$apt_dir/sources.list"
	fi
	apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=$apt_dir/sources.d"
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache")
	if ! ls "$apt_dir/lists/"*_Sources* >/dev/null 2>&1; then
		apt-get "${apt_opts[@]}" update -qq >/dev/null ||
			{ echo "hvtrace: apt-get update with $apt_dir/sources.list failed" >&2; exit 1; }
	fi
}

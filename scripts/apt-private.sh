# Sourced by scripts/fetch-guest.sh and scripts/fetch-qemu.sh: a private apt configuration in
# $cache/apt (the machine's own archive, suites trixie, trixie-backports, sid and bookworm-backports)
# through which packages of other Debian releases are downloaded (`apt-get download`), never installed.
# The caller sets $cache and stops on errors (set -e).

# Fills the array apt_opts with the private configuration, its package lists fetched once.
apt_private_setup() {
	local apt_dir="$cache/apt" uri suite
	mkdir -p "$apt_dir/sources.d" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$cache/debs"
	if [ ! -s "$apt_dir/sources.list" ]; then
		# the machine's own archive (its first deb URI), the suites Debian ships newer packages in
		uri=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
		[ -n "$uri" ] || uri=$(sed -n 's/^deb \(\[[^]]*\] *\)\?\([^ ]*\) .*/\2/p' /etc/apt/sources.list 2>/dev/null | head -1)
		uri=${uri:-http://deb.debian.org/debian}
		for suite in trixie trixie-backports sid bookworm-backports; do
			echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main"
		done > "$apt_dir/sources.list"
	fi
	apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=$apt_dir/sources.d"
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
		-o Dir::Cache::pkgcache=pkgcache.bin -o Dir::Cache::srcpkgcache=srcpkgcache.bin) # kept: ~20 s less per run
	if ! ls "$apt_dir/lists/"*_Packages* >/dev/null 2>&1; then
		apt-get "${apt_opts[@]}" update -qq >/dev/null ||
			{ echo "hvtrace: apt-get update with $apt_dir/sources.list failed" >&2; exit 1; }
	fi
}

# PACKAGE[/SUITE] -> the path of its .deb in $cache/debs (or $cache/kdebs), downloaded with the
# private configuration when it is not there yet (with a suite: the version of that suite).
apt_private_fetch() {
	local pkg=${1%%/*} deb ver=""
	if [ "$pkg" != "$1" ]; then
		ver=$(apt-cache "${apt_opts[@]}" show --no-all-versions "$1" 2>/dev/null | sed -n 's/^Version: //p' | head -1)
		[ -n "$ver" ] || { echo "hvtrace: no package $1 in $cache/apt/sources.list" >&2; exit 1; }
		ver=${ver#*:}_ # no epoch: it is %3a-quoted in the file name
	fi
	deb=$(ls "$cache/debs/${pkg}_"*"$ver"*.deb "$cache/kdebs/${pkg}_"*"$ver"*.deb 2>/dev/null | head -1 || true)
	if [ -z "$deb" ]; then
		(cd "$cache/debs" && apt-get "${apt_opts[@]}" download -q "$1" >/dev/null 2>&1) ||
			{ echo "hvtrace: apt-get download $1 failed" >&2; exit 1; }
		deb=$(ls "$cache/debs/${pkg}_"*"$ver"*.deb | head -1)
	fi
	echo "$deb"
}

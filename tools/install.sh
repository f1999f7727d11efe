#!/usr/bin/env bash
# Builds Sightline for release and installs it so that `sightline` works from any directory:
# the program and what it reads beside it (the console's pages, the bundled samples, dlib's
# models) in PREFIX/lib/sightline, a link in PREFIX/bin, shell completions (bash, zsh, fish)
# and the man pages. PREFIX is ~/.local, or /usr/local when run as root; --prefix DIR
# chooses. Safe to run again: it replaces what it installed before.
#
# The first build takes about ten minutes on two cores (dlib, FFmpeg's and SwiftNIO's
# modules are compiled once); later ones take seconds to a minute.
set -euo pipefail
cd "$(dirname "$0")/.."

prefix=$([ "$(id -u)" = 0 ] && echo /usr/local || echo "$HOME/.local")
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=${2:?--prefix needs a directory}; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "Error: unknown option $1 (tools/install.sh [--prefix DIR])" >&2; exit 1 ;;
  esac
done

tools/setup.sh
echo "building sightline for release (the first build takes about ten minutes)…"
swift build -c release --product sightline
built=$(swift build -c release --show-bin-path)

home="$prefix/lib/sightline"
rm -rf "$home"
install -d "$home" "$prefix/bin"
install -m 755 "$built/sightline" "$home/sightline"
cp -r "$built"/*.resources "$home/"            # the console's pages, the bundled samples
[ -d models ] && cp -r models "$home/models"    # dlib's landmark and recognition models
ln -sf "$home/sightline" "$prefix/bin/sightline"

# Completions, as swift-argument-parser writes them.
install -d "$prefix/share/bash-completion/completions" "$prefix/share/zsh/site-functions" \
  "$prefix/share/fish/vendor_completions.d"
"$home/sightline" --generate-completion-script bash > "$prefix/share/bash-completion/completions/sightline"
"$home/sightline" --generate-completion-script zsh > "$prefix/share/zsh/site-functions/_sightline"
"$home/sightline" --generate-completion-script fish > "$prefix/share/fish/vendor_completions.d/sightline.fish"

# Man pages: swift-argument-parser's generate-manual plugin, one page for each command.
manuals=$(mktemp -d)
swift package --allow-writing-to-directory "$manuals" generate-manual --multi-page --output-directory "$manuals" \
  >/dev/null
install -d "$prefix/share/man/man1"
install -m 644 "$manuals"/*.1 "$prefix/share/man/man1/"
rm -rf "$manuals"

echo "installed sightline in $home"
echo "  command:     $prefix/bin/sightline"
echo "  manual:      man sightline (and man sightline.run, sightline.serve, …)"
echo "  completions: bash, zsh and fish (open a new shell)"
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "note: $prefix/bin is not on your PATH; add it: echo 'export PATH=\"$prefix/bin:\$PATH\"' >> ~/.bashrc" ;;
esac

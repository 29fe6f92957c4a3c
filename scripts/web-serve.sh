# Sourced by test-web.sh and bench-web.sh: serves a folder on 127.0.0.1 for as long as the
# calling script runs, and readies the browser driver.

# serve DIR: starts a static server on a free port and sets $base to its address.
serve() {
    local dir="$1" port
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    python3 -m http.server "$port" --bind 127.0.0.1 --directory "$dir" >/dev/null 2>&1 &
    server_pid=$!
    trap 'kill "$server_pid" 2>/dev/null || true' EXIT
    base="http://127.0.0.1:$port"
    for _ in $(seq 50); do
        python3 -c "import urllib.request; urllib.request.urlopen('$base/index.html')" 2>/dev/null && return 0
        sleep 0.2
    done
    echo "the web server on $base did not start" >&2
    return 1
}

# The browser: Debian's Chromium, driven by playwright-core at the version web/test pins.
ready_browser() {
    if [[ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]]; then
        echo "no Chromium: apt-get install chromium (or set CHROMIUM to one)" >&2
        return 1
    fi
    if [[ ! -d web/test/node_modules/playwright-core || ! -d web/test/node_modules/reveal.js ]]; then
        npm ci --prefix web/test --no-audit --no-fund >/dev/null
    fi
}

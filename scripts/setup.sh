#!/usr/bin/env bash
# One-time set-up (idempotent) on Debian/Ubuntu, on the distribution's own python3 or on a pyenv or
# python.org Python 3.11+:
#   1. system packages the tests use, when missing: redis-server, chromium, a Java runtime (Spark tests),
#      a JDK, Quartz 2.3's jars and PostgreSQL (the Quartz cluster tests), Node.js and npm (the BullMQ
#      lab's real workers), and python3-venv when this Python cannot make a virtual environment
#      (Debian/Ubuntu split it out);
#   2. a virtual environment in .venv (a distribution's Python refuses `pip install` outside one: PEP 668);
#   3. leaselog installed into it, editable, with the extras the tests use.
# Afterwards .venv/bin/leaselog and .venv/bin/python are ready (or `source .venv/bin/activate`).
#
# Environment: PYTHON (the interpreter to build .venv with; default python3), LEASELOG_EXTRAS (default
# dev,lab,bench,spark,s3,http), LEASELOG_NO_APT=1 (do not install system packages; say what is missing).
# Any failing step stops the script with a non-zero exit and says which step failed.
set -Eeuo pipefail
cd "$(dirname "$0")/.."

step="start"
trap 'rc=$?; echo "setup.sh: failed (exit $rc) while: $step" >&2; exit $rc' ERR
die() {
  echo "setup.sh: error: $*" >&2
  exit 1
}

python=${PYTHON:-python3}
extras=${LEASELOG_EXTRAS:-dev,lab,bench,spark,s3,http}

step="finding Python 3.11+ ($python)"
command -v "$python" >/dev/null 2>&1 || die "no '$python' on PATH: install Python 3.11 or newer (apt-get install python3)"
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
  die "leaselog needs Python 3.11 or newer; '$python' is $version (set PYTHON=/path/to/python3.11+)"

# a .venv from an earlier run is reused when it works with Python 3.11+ (and has pip), else made again
venv_ok() { [ -x .venv/bin/python ] && .venv/bin/python -c 'import sys, pip; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1; }

# 1. system packages: what is missing, then the package that provides it on this distribution
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis)
[ -x /usr/bin/chromium ] || missing+=(chromium) # the browser tests drive Debian's /usr/bin/chromium
java -version >/dev/null 2>&1 || missing+=(java)
# the Quartz cluster tests: a JDK (javac), Debian's Quartz 2.3 and its jars, and a PostgreSQL server
command -v javac >/dev/null 2>&1 || missing+=(jdk)
for jar in quartz2 slf4j-api slf4j-simple postgresql HikariCP; do
  [ -f "/usr/share/java/$jar.jar" ] || { missing+=(quartz); break; }
done
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
{ command -v node && command -v npm; } >/dev/null 2>&1 || missing+=(node) # the BullMQ lab's workers
# Debian/Ubuntu ship venv's pip bootstrap (ensurepip) apart, in python3-venv / python3.X-venv
venv_ok || "$python" -c 'import ensurepip, venv' >/dev/null 2>&1 || missing+=(venv)
if [ ${#missing[@]} -gt 0 ]; then
  step="installing system packages for: ${missing[*]}"
  if [ "${LEASELOG_NO_APT:-}" = 1 ]; then
    echo "setup.sh: not installing (LEASELOG_NO_APT=1) what provides: ${missing[*]}" >&2
  elif ! command -v apt-get >/dev/null 2>&1; then
    die "no apt-get here: install ${missing[*]} (redis-server, chromium, Java 17+, Node.js and npm, python3-venv) with this system's package manager, then run setup.sh again (or LEASELOG_NO_APT=1 to go on without them)"
  else
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
      command -v sudo >/dev/null 2>&1 || die "installing packages for ${missing[*]} needs root: run as root, or install sudo"
      sudo=(sudo)
    fi
    "${sudo[@]}" apt-get update -qq
    # installable here (grep reads to the end: with -q it stops at the match, apt-cache then dies of SIGPIPE,
    # and pipefail made every package look missing)
    has() { apt-cache policy "$1" 2>/dev/null | grep 'Candidate: [^(]' >/dev/null; }
    need=()
    for m in "${missing[@]}"; do
      case $m in
        redis) need+=(redis-server) ;;
        chromium)
          if has chromium; then need+=(chromium); else
            # Ubuntu ships Chromium only as a snap: the browser tests are then skipped
            echo "setup.sh: note: no 'chromium' package here: the browser tests will be skipped" >&2
          fi ;;
        java) # Spark needs Java 17+: Debian 12 and Ubuntu have 17, Debian 13 only 21
          if has openjdk-17-jre-headless; then need+=(openjdk-17-jre-headless); else need+=(openjdk-21-jre-headless); fi ;;
        jdk)
          if has openjdk-17-jdk-headless; then need+=(openjdk-17-jdk-headless); else need+=(default-jdk-headless); fi ;;
        quartz) need+=(libquartz2-java libslf4j-java libpostgresql-jdbc-java libhikaricp-java) ;;
        postgresql) need+=(postgresql) ;;
        node) need+=(nodejs npm) ;;
        venv)
          need+=(python3-venv)
          if has "python$version-venv"; then need+=("python$version-venv"); fi ;;
      esac
    done
    if [ ${#need[@]} -gt 0 ]; then
      step="apt-get install ${need[*]}"
      echo "setup.sh: apt-get install ${need[*]}"
      DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
    fi
  fi
fi

# 2. the virtual environment
step="making the virtual environment .venv with $python"
if venv_ok; then
  echo "setup.sh: using .venv ($(.venv/bin/python --version))"
else
  rm -rf .venv
  "$python" -c 'import ensurepip' >/dev/null 2>&1 ||
    die "'$python' cannot make a virtual environment (no ensurepip): install python3-venv (or python$version-venv)"
  "$python" -m venv .venv
  echo "setup.sh: made .venv ($(.venv/bin/python --version))"
fi

# 3. leaselog into it
step="pip install -e '.[$extras]' into .venv"
echo "setup.sh: installing leaselog[$extras] into .venv (the first time takes a few minutes)"
# (pipefail: pip's own exit status stands; sed only drops the notes about unreachable local index folders
# that some machines' pip.conf names)
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$extras]" 2>&1 |
  sed -u -e '/is ignored: it is neither a file nor a directory/d'

step="checking .venv/bin/leaselog"
.venv/bin/leaselog --help >/dev/null
echo "setup.sh: ready: .venv/bin/leaselog (or 'source .venv/bin/activate', then leaselog)"

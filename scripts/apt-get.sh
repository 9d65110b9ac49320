# Sourced by test.sh and rest/web/browsertest/chromium.sh: apt_get runs apt-get (with sudo when
# not root, non-interactively) and, when another apt or dpkg run holds the package locks (an
# unattended upgrade, or a second checkout's test.sh installing the same packages at the same
# time), waits for it — each attempt waits up to 60 s for the dpkg lock itself, and a lock error
# is tried again every 10 s for up to 10 minutes — instead of failing the whole test run at once.
# Any other apt-get error is returned at once.
apt_get() {
  local sudo_cmd="" out attempt
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  for attempt in $(seq 1 60); do
    if out=$($sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=60 "$@" 2>&1); then
      [ -z "$out" ] || printf '%s\n' "$out"
      return 0
    fi
    printf '%s\n' "$out" >&2
    case "$out" in
      *"Could not get lock"* | *"Unable to lock"* | *"Unable to acquire"*)
        echo "== apt-get $1: the package locks are held by another run (attempt $attempt of 60); again in 10 s" >&2
        sleep 10 ;;
      *) return 1 ;;
    esac
  done
  return 1
}

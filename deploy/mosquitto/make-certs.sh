#!/bin/sh
# Make a test CA, a broker certificate and client certificates for edgetriage's Mosquitto (mosquitto.conf here).
#
#   deploy/mosquitto/make-certs.sh OUT_DIR [-n BROKER_HOST]... [CLIENT_NAME]...
#
# OUT_DIR gets ca.crt/ca.key, broker.crt/broker.key (subjectAltName: localhost, 127.0.0.1 and every -n name)
# and NAME.crt/NAME.key per client, its CN = NAME: a device id, or "edgetriage.cloud" for the cloud service
# (always made). Devices are signed by ca.crt; the cloud (every name starting "edgetriage.cloud") by a CA of
# its own, cloud-ca.crt/cloud-ca.key, which only the cloud's listener trusts: that is how the broker tells a
# cloud worker from a device. Existing CAs in OUT_DIR are reused, so devices can be added later. Also creates
# an empty OUT_DIR/passwd if there is none (add users with: mosquitto_passwd OUT_DIR/passwd NAME).
# For production, sign with your own CA and keep ca.key off the broker.
set -eu

usage() { echo "usage: $0 OUT_DIR [-n BROKER_HOST]... [CLIENT_NAME]..." >&2; exit 2; }
[ $# -ge 1 ] || usage
out=$1; shift
hosts=""
clients="edgetriage.cloud"
while [ $# -gt 0 ]; do
    case "$1" in
        -n) [ $# -ge 2 ] || usage; hosts="$hosts $2"; shift 2 ;;
        -*) usage ;;
        *) clients="$clients $1"; shift ;;
    esac
done
command -v openssl >/dev/null || { echo "$0: openssl is not installed" >&2; exit 1; }
mkdir -p "$out"
umask 077
days=825

if [ ! -f "$out/ca.key" ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
        -subj "/CN=edgetriage test CA" -keyout "$out/ca.key" -out "$out/ca.crt" 2>/dev/null
fi
if [ ! -f "$out/cloud-ca.key" ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
        -subj "/CN=edgetriage test cloud CA" -keyout "$out/cloud-ca.key" -out "$out/cloud-ca.crt" 2>/dev/null
fi

ext=$(mktemp)
trap 'rm -f "$ext"' EXIT

sign() {  # name, extension lines
    name=$1; shift
    printf '%s\n' "$@" > "$ext"
    case "$name" in
        edgetriage.cloud*) ca=cloud-ca ;;
        *) ca=ca ;;
    esac
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$name" \
        -keyout "$out/$name.key" -out "$out/$name.csr" 2>/dev/null
    openssl x509 -req -in "$out/$name.csr" -CA "$out/$ca.crt" -CAkey "$out/$ca.key" -CAcreateserial \
        -days "$days" -sha256 -extfile "$ext" -out "$out/$name.crt" 2>/dev/null
    rm -f "$out/$name.csr"
}

san="DNS:localhost,IP:127.0.0.1"
for h in $hosts; do
    case "$h" in
        *[!0-9.]*) san="$san,DNS:$h" ;;
        *) san="$san,IP:$h" ;;
    esac
done
sign broker "basicConstraints=CA:FALSE" "keyUsage=digitalSignature" "extendedKeyUsage=serverAuth" \
    "subjectAltName=$san"
for c in $clients; do
    case "$c" in
        */*|*+*|*#*|broker|ca|cloud-ca) echo "$0: '$c' cannot be a client name" >&2; exit 2 ;;
    esac
    sign "$c" "basicConstraints=CA:FALSE" "keyUsage=digitalSignature" "extendedKeyUsage=clientAuth"
done
[ -f "$out/passwd" ] || : > "$out/passwd"
chmod 644 "$out"/*.crt
echo "certificates in $out: ca.crt cloud-ca.crt broker.crt $(for c in $clients; do printf '%s.crt ' "$c"; done)"

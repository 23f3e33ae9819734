#!/bin/sh
# deploy/tls.sh DIR [NAMESPACE] — make the coordinator's TLS material for
# coordinator.yaml with openssl: a CA (ca.crt, ca.key: keep the key
# offline) and one certificate for all three servers (tls.crt, tls.key),
# ECDSA P-256, good for serving and as a client (Raft and server-to-server
# requests are mutual TLS), named for every address the servers and their
# clients use:
#
#   atom-coordinator, atom-coordinator.NS, atom-coordinator.NS.svc,
#   atom-coordinator.NS.svc.cluster.local      the client Service
#   *.atom-coordinator-peers.NS.svc,
#   *.atom-coordinator-peers.NS.svc.cluster.local  each server's stable name
#   localhost, 127.0.0.1                       kubectl port-forward
#
# Then create the Secret coordinator.yaml mounts (keys as cert-manager
# writes them, so a cert-manager Certificate with these names and
# usages "server auth", "client auth" may make it instead):
#
#   kubectl -n NS create secret generic atom-coordinator-tls \
#     --from-file=DIR/tls.crt --from-file=DIR/tls.key --from-file=DIR/ca.crt
#
# and give the CLI the CA: coordinator --tls-ca DIR/ca.crt (or ATOM_TLS_CA).
# Task Pods get the CA from the coordinator (ATOM_TLS_CA). DIR must not
# hold a ca.key already: the script never overwrites a CA.
set -eu
dir=${1:?usage: deploy/tls.sh DIR [NAMESPACE]}
ns=${2:-atom}
days=${ATOM_TLS_DAYS:-365}
command -v openssl >/dev/null || { echo "deploy/tls.sh: openssl is required (apt-get install openssl)" >&2; exit 1; }
mkdir -p "$dir"
if [ -e "$dir/ca.key" ]; then
	echo "deploy/tls.sh: $dir/ca.key exists: refusing to replace a CA (use another DIR)" >&2
	exit 1
fi
umask 077
openssl ecparam -name prime256v1 -genkey -noout -out "$dir/ca.key"
openssl req -x509 -new -key "$dir/ca.key" -sha256 -days $((days * 5)) \
	-subj "/CN=atom coordinator CA" -out "$dir/ca.crt"
openssl ecparam -name prime256v1 -genkey -noout -out "$dir/tls.key"
ext="$dir/ext.cnf"
cat >"$ext" <<CNF
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:atom-coordinator, DNS:atom-coordinator.$ns, DNS:atom-coordinator.$ns.svc, DNS:atom-coordinator.$ns.svc.cluster.local, DNS:*.atom-coordinator-peers.$ns.svc, DNS:*.atom-coordinator-peers.$ns.svc.cluster.local, DNS:localhost, IP:127.0.0.1
CNF
openssl req -new -key "$dir/tls.key" -subj "/CN=atom-coordinator.$ns.svc" -out "$dir/tls.csr"
openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
	-sha256 -days "$days" -extfile "$ext" -out "$dir/tls.crt" 2>/dev/null
rm -f "$dir/tls.csr" "$ext" "$dir/ca.srl"
chmod 0644 "$dir/ca.crt" "$dir/tls.crt"
echo "wrote $dir/ca.crt $dir/ca.key $dir/tls.crt $dir/tls.key (valid $days days); next:"
echo "  kubectl -n $ns create secret generic atom-coordinator-tls --from-file=$dir/tls.crt --from-file=$dir/tls.key --from-file=$dir/ca.crt"

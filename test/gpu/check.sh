#!/usr/bin/env bash
# make gpu-check: atom's real NVML path on a machine with NVIDIA GPUs.
#   1. atom preflight with every GPU allocated as its real model: passes
#      and prints the UUIDs;
#   2. the same allocation as another model: refused (exit 3); atom gpus
#      --spark outside a task (a Spark executor's discovery) lists them all;
#   3. a job on `coordinator dev --real-gpus` asking for every GPU: atom
#      checks them with NVML before the command runs, and the command sees
#      ATOM_GPU_UUIDS and CUDA_VISIBLE_DEVICES;
#   4. a CPU job on the same host passes the preflight and sees no GPU.
# Uses $ATOM_BIN_DIR/{atom,coordinator} when there (prebuilt), else builds.
set -u
BIN=${ATOM_BIN_DIR:-bin}
if [ ! -x "$BIN/atom" ] || [ ! -x "$BIN/coordinator" ]; then
	mkdir -p "$BIN" && go build -o "$BIN/atom" ./atom && go build -o "$BIN/coordinator" ./coordinator || exit 1
fi
BIN=$(cd "$BIN" && pwd)
fail() { echo "gpu_check=failed step=\"$*\""; exit 1; }
command -v nvidia-smi >/dev/null || fail "nvidia-smi not found: run this on a machine with an NVIDIA GPU and its driver"
n=$(nvidia-smi -L | grep -c '^GPU ')
model=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | awk '{print $NF}')
accels=$(seq -s, 0 $((n - 1)))
echo "gpus=$n model=$model"

echo "== 1. preflight: $n $model allocated"
ATOM_ACCELERATORS=$accels ATOM_ACCEL_TYPE=$model "$BIN/atom" preflight || fail "preflight of the real GPUs"

echo "== 2. preflight: the same GPUs allocated as V100 must be refused"
ATOM_ACCELERATORS=$accels ATOM_ACCEL_TYPE=V100 "$BIN/atom" preflight
rc=$?
[ "$rc" -eq 3 ] || fail "wrong model not refused (exit $rc, want 3)"

echo "== 2b. atom gpus --spark outside a task (a Spark executor's discovery script): every GPU"
out=$("$BIN/atom" gpus --spark) || fail "atom gpus --spark without an allocation"
echo "$out"
want="{\"name\":\"gpu\",\"addresses\":[$(seq -s, 0 $((n - 1)) | sed 's/[0-9]*/"&"/g')]}"
[ "$out" = "$want" ] || fail "atom gpus --spark printed $out, want $want"

echo "== 3. a job on coordinator dev --real-gpus"
work=$(mktemp -d)
tok=gpucheck-$(date +%s%N)
cat >"$work/tokens.yaml" <<EOT
users:
  - {name: dev, token: $tok, admin: true}
EOT
cat >"$work/cluster.yaml" <<EOT
clusters: [{name: local, backend: local}]
nodes:
  - {name: gpu-1, cpu: "8", memory: 16Gi, accelerators: {type: $model, count: $n}}
  - {name: cpu-1, cpu: "4", memory: 8Gi}
quotas:
  - {scope: "user:dev", limits: {cpu: "12", memory: 24Gi, gpu/$model: $n}}
EOT
cat >"$work/job.yaml" <<EOT
kind: command
name: nvml
resources: {cpu: 1, memory: 1Gi, accelerators: {type: $model, count: $n}}
command: [sh, -c, 'echo uuids=\$ATOM_GPU_UUIDS cuda=\$CUDA_VISIBLE_DEVICES; nvidia-smi -L']
EOT
cat >"$work/cpu.yaml" <<EOT
kind: command
name: cpu
resources: {cpu: 1, memory: 1Gi}
command: [sh, -c, 'echo cuda=[\$CUDA_VISIBLE_DEVICES]']
EOT
"$BIN/coordinator" dev --real-gpus --tokens "$work/tokens.yaml" --cluster-config "$work/cluster.yaml" \
	--data-dir "$work/data" --http-addr 127.0.0.1:7399 --atom "$BIN/atom" >"$work/dev.log" 2>&1 &
dev=$!
trap 'kill $dev 2>/dev/null; wait $dev 2>/dev/null' EXIT
export ATOM_ADDR=http://127.0.0.1:7399 ATOM_TOKEN=$tok
for _ in $(seq 100); do "$BIN/coordinator" node list 2>/dev/null | grep -q cpu-1 && break; sleep 0.1; done
"$BIN/coordinator" job submit -f "$work/job.yaml" --wait || fail "submit"
id=$("$BIN/coordinator" job list -o json | sed -n 's/.*"id": *"\(nvml-[a-z0-9]*\)".*/\1/p' | head -1)
for _ in $(seq 100); do
	state=$("$BIN/coordinator" job status -o json "$id" | sed -n 's/^    "state": *"\([A-Za-z]*\)".*/\1/p' | head -1)
	case $state in Succeeded | Failed | Cancelled) break ;; esac
	sleep 0.2
done
"$BIN/coordinator" job status "$id"
logs=$("$BIN/coordinator" job logs "$id")
echo "$logs"
[ "$state" = Succeeded ] || fail "job $id ended $state"
echo "$logs" | grep -q '^uuids=GPU-.* cuda=GPU-' || fail "the job did not see ATOM_GPU_UUIDS and CUDA_VISIBLE_DEVICES"

echo "== 4. a CPU job (node cpu-1, the same GPU host): passes the preflight, sees no GPU"
"$BIN/coordinator" job submit -f "$work/cpu.yaml" --wait || fail "submit cpu"
cid=$("$BIN/coordinator" job list -o json | sed -n 's/.*"id": *"\(cpu-[a-z0-9]*\)".*/\1/p' | head -1)
for _ in $(seq 100); do
	state=$("$BIN/coordinator" job status -o json "$cid" | sed -n 's/^    "state": *"\([A-Za-z]*\)".*/\1/p' | head -1)
	case $state in Succeeded | Failed | Cancelled) break ;; esac
	sleep 0.2
done
clogs=$("$BIN/coordinator" job logs "$cid")
echo "$clogs"
[ "$state" = Succeeded ] || fail "cpu job $cid ended $state"
echo "$clogs" | grep -q '^cuda=\[\]' || fail "the CPU job saw GPUs"
echo "gpu_check=ok"

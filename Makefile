# atom — see README.md. Every target installs what it needs.
GO      ?= go
PKGS    ?= ./...
export GOFLAGS := -buildvcs=false

.PHONY: all build test deps-ui bench-ui bench-sched bench-raft sim fuzz deps deps-mpi deps-etcd k8s-tools test-k8s bench-k8s demo gpu-check deps-cache bench-fuse chaos deps-spark images deps-images bench-node

all: build

deps: ## tools the tests need (none beyond Go for the core yet)
	@$(GO) version >/dev/null || { echo "Go 1.26+ is required: https://go.dev/dl" >&2; exit 1; }
	@$(GO) mod download

build: deps deps-cache
	$(GO) build $(PKGS)
	$(GO) build -o bin/coordinator ./coordinator
	$(GO) build -o bin/atom ./atom

test: deps deps-mpi deps-cache deps-etcd deps-node k8s-tools deps-spark deps-images deps-ui
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 -timeout 30m $(PKGS)

# atom's real NVML path on a machine with NVIDIA GPUs: the preflight of
# every GPU, a wrong model refused, and a job on coordinator dev --real-gpus
# checked by atom before it runs (test/gpu/check.sh).
gpu-check: deps deps-cache
	./test/gpu/check.sh

# Scheduling core throughput: 10,000 nodes, 100,000 pending jobs, one core.
bench-sched: deps
	GOMAXPROCS=1 $(GO) run ./test/benchsched
	GOMAXPROCS=1 $(GO) run ./test/benchsched -topology

# Raft-committed placements, submit->commit latency against the disk's own
# fdatasync latency, and leader failover: three coordinator servers on
# loopback; key=value lines, each target with whether it was met.
bench-raft: deps
	$(GO) run ./test/benchraft

# Alibaba GPU trace replays: packing (atom vs First-Fit, Best-Fit, Random)
# and contended (atom vs atom-fifo, First-Fit, Best-Fit); exits 1 on a missed target.
sim: deps
	$(GO) run ./test/sim

fuzz: deps
	$(GO) test ./pkg/structs -run '^$$' -fuzz FuzzParseJobSpec -fuzztime 60s
	$(GO) test ./coordinator/api -run '^$$' -fuzz '^FuzzSubmitJob$$' -fuzztime 2000x
	$(GO) test ./coordinator/api -run '^$$' -fuzz '^FuzzScale$$' -fuzztime 2000x
	$(GO) test ./coordinator/api -run '^$$' -fuzz '^FuzzPutQuota$$' -fuzztime 2000x
	$(GO) test ./coordinator/api -run '^$$' -fuzz '^FuzzPutPool$$' -fuzztime 2000x
	$(GO) test ./coordinator/api -run '^$$' -fuzz '^FuzzPutNode$$' -fuzztime 2000x
	$(GO) test ./coordinator/api -run '^$$' -fuzz '^FuzzPutCluster$$' -fuzztime 2000x
	$(GO) test ./coordinator/api -run '^$$' -fuzz '^FuzzHeartbeat$$' -fuzztime 2000x

# OpenMPI for the MPI jobs (mpicc builds the demo's MPI program), when
# mpicc or mpirun is missing: apt-get install, with apt-get update first
# only if that fails; sudo when not root.
SUDO ?= $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
deps-mpi:
	@if ! command -v mpicc >/dev/null 2>&1 || ! command -v mpirun >/dev/null 2>&1; then \
		echo "installing OpenMPI: apt-get install -y openmpi-bin libopenmpi-dev"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y openmpi-bin libopenmpi-dev || \
		{ $(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y openmpi-bin libopenmpi-dev; }; \
	fi

# The Kubernetes parts of the tests (test/k8s/k8stest): etcd from Debian's
# etcd-server, when etcd is missing (apt-get update only if the install
# fails); kube-apiserver and kube-scheduler from k8s.io/kubernetes v1.37.2 and
# kwok v0.8.0, built from the tools module test/k8s/tools into
# ${XDG_CACHE_HOME:-$HOME/.cache}/atom/k8s-v1.37.2 (or $ATOM_K8S_TOOLS) once:
# 12-20 minutes on 2 cores the first time, nothing after. openssl for
# deploy/tls.sh, which test/k8s/deploy runs.
deps-etcd:
	@if ! command -v etcd >/dev/null 2>&1; then \
		echo "installing etcd: apt-get install -y etcd-server"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y etcd-server || \
		{ $(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y etcd-server; }; \
	fi
	@if ! command -v openssl >/dev/null 2>&1; then \
		echo "installing openssl: apt-get install -y openssl"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y openssl || \
		{ $(SUDO) apt-get update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y openssl; }; \
	fi

k8s-tools:
	@GO=$(GO) ./test/k8s/tools/build.sh >/dev/null

# The real node of the Kubernetes tests (k8stest.AddRealNode): a kubelet,
# which k8s-tools builds, on Debian's containerd 1.6, runc and CNI plugins
# (bridge, host-local, loopback, portmap), with iproute2 and iptables.
# apt-get install when one is missing, apt-get update only if that fails.
.PHONY: deps-node
NODE_PKGS := containerd runc containernetworking-plugins iproute2 iptables
deps-node:
	@if ! command -v containerd >/dev/null 2>&1 || ! command -v containerd-shim-runc-v2 >/dev/null 2>&1 || \
	    ! command -v ctr >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1 || [ ! -x /usr/lib/cni/bridge ] || \
	    [ ! -x /usr/lib/cni/host-local ] || [ ! -x /usr/lib/cni/loopback ] || [ ! -x /usr/lib/cni/portmap ] || \
	    ! command -v ip >/dev/null 2>&1 || ! command -v iptables >/dev/null 2>&1; then \
		echo "installing the real node's runtime: apt-get install -y $(NODE_PKGS)"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y $(NODE_PKGS) || \
		{ $(SUDO) apt-get -o DPkg::Lock::Timeout=300 update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y $(NODE_PKGS); }; \
	fi

# Only the tests against the real API server.
test-k8s: deps deps-cache deps-etcd deps-node k8s-tools deps-images
	$(GO) test -race -count=1 -v ./test/k8s/...

# atom against the floor (Pods created bound, no scheduler), kube-scheduler
# (default and with atom's client rate), gangs (kube-scheduler's Workload
# API) and Kueue on the same kind of cluster (200 kwok nodes of 8 GPUs,
# 1,000 one-GPU tasks): submission to all Pods Running, side by side;
# key=value lines (test/README.md, Measured). k8s-bench-tools builds
# kube-controller-manager and Kueue v0.17.0 once into
# ${XDG_CACHE_HOME:-$HOME/.cache}/atom/bench-k8s-v1.37.2-kueue-v0.17.0 (or
# $ATOM_K8S_BENCH_TOOLS); make test does not need them.
.PHONY: k8s-bench-tools
k8s-bench-tools:
	@GO=$(GO) ./test/k8s/tools/build-bench.sh >/dev/null

bench-k8s: deps deps-etcd k8s-tools k8s-bench-tools
	$(GO) run ./test/benchk8s

# Task start on a real node (test/benchnode): a kubelet with containerd
# and 24 fake GPUs, the cpu image imported, a one-server coordinator; 20
# one-GPU services one after another, placement committed to atom
# reporting Running, then the same Pods through kube-scheduler; key=value
# lines, the last start_p50_s, start_p99_s (target <= 2) and
# submit_to_running_p99_s. Runs as root; waits for the machine's real node.
bench-node: deps deps-cache deps-etcd deps-node deps-images k8s-tools
	$(GO) run ./test/benchnode

# The dataset cache (pkg/cache, atom/internal/cachefs, atom cache): Redis
# for its tests, fusermount (fuse3), and the FUSE 2 headers and library
# that cgofuse builds and runs against (libfuse-dev, libfuse2): every atom
# build needs the headers. apt-get install when one is missing, with
# apt-get update first only if that fails.
deps-cache:
	@if ! command -v redis-server >/dev/null 2>&1 || ! command -v fusermount >/dev/null 2>&1 || [ ! -e /usr/include/fuse/fuse.h ]; then \
		echo "installing Redis and FUSE: apt-get install -y redis-server fuse3 libfuse-dev"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y redis-server fuse3 libfuse-dev || \
		{ $(SUDO) apt-get -o DPkg::Lock::Timeout=300 update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y redis-server fuse3 libfuse-dev; }; \
	fi

# Spark for the spark jobs' tests (test/spark): PyPI's pyspark, which ships
# spark-submit and Spark's jars, and redis-py for the Redis example job, in
# a virtualenv at ${XDG_CACHE_HOME:-$HOME/.cache}/atom/spark-$(SPARK_VERSION)
# (or $ATOM_SPARK_VENV), made once and reused while its .installed lists the
# same pins. Spark 4 needs Java 17 or later: Debian's openjdk-17-jre-headless
# when java is missing or older, and python3-venv when python3 cannot make a
# virtualenv (apt-get update only if the install fails). The tests find the
# virtualenv in ATOM_SPARK_VENV, exported here.
SPARK_VERSION   ?= 4.3.0
SPARK_PIP_PINS  ?= pyspark==$(SPARK_VERSION) redis==8.1.0
ATOM_SPARK_VENV ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/atom/spark-$(SPARK_VERSION)
export ATOM_SPARK_VENV
deps-spark:
	@major=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1); \
	if [ -z "$$major" ] || [ "$$major" -lt 17 ]; then \
		echo "installing Java 17 for Spark (java: $${major:-missing}): apt-get install -y openjdk-17-jre-headless"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y openjdk-17-jre-headless || \
		{ $(SUDO) apt-get -o DPkg::Lock::Timeout=300 update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y openjdk-17-jre-headless; }; \
	fi
	@if [ "$$(cat '$(ATOM_SPARK_VENV)/.installed' 2>/dev/null)" != "$(SPARK_PIP_PINS)" ]; then \
		if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then \
			echo "installing python3-venv: apt-get install -y python3 python3-venv"; \
			$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y python3 python3-venv || \
			{ $(SUDO) apt-get -o DPkg::Lock::Timeout=300 update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y python3 python3-venv; }; \
		fi; \
		echo "installing $(SPARK_PIP_PINS) into $(ATOM_SPARK_VENV) (about 450 MB, once)"; \
		rm -rf '$(ATOM_SPARK_VENV)' && python3 -m venv '$(ATOM_SPARK_VENV)' && \
		'$(ATOM_SPARK_VENV)/bin/pip' install --quiet --disable-pip-version-check $(SPARK_PIP_PINS) && \
		echo '$(SPARK_PIP_PINS)' > '$(ATOM_SPARK_VENV)/.installed' || \
		{ echo "deps-spark: pip install $(SPARK_PIP_PINS) into $(ATOM_SPARK_VENV) failed" >&2; exit 1; }; \
	fi
	@echo "deps-spark: Spark $(SPARK_VERSION) is in $(ATOM_SPARK_VENV); for spark-submit, and for local Spark jobs (start coordinator dev after it):"
	@echo "  export PATH=$(ATOM_SPARK_VENV)/bin:\$$PATH"

# Sequential read of a 256 MiB file through the cache's FUSE mount vs plain
# go-redis GETs of the same chunks, round by round; key=value lines, the
# last fuse_read_ratio (target >= 0.5).
bench-fuse: deps deps-cache
	$(GO) build -o bin/atom ./atom
	$(GO) run ./test/benchfuse --atom bin/atom

# Spark's dynamic allocation on a real node (test/benchspark): the seed's
# LiDAR clean (3,000,000 points, then a 20 s idle spell) with dynamic
# allocation, then with as many fixed executors as it peaked at, the spark
# image imported into a real node (2 CPUs) and a one-server coordinator
# binding the executor Pods; key=value lines: executors_peak,
# executors_final, job_seconds, fixed_job_seconds,
# executor_seconds_dynamic, executor_seconds_fixed. Runs as root; waits
# for the machine's real node.
.PHONY: bench-spark
bench-spark: deps deps-etcd deps-node deps-images k8s-tools
	$(GO) run ./test/benchspark

# The fault and load suite (test/chaos): three coordinator servers and the
# local backend for CHAOS_DURATION while four clients submit, cancel and
# scale and the suite kills the leader, pauses a follower, kills atoms and
# cuts a server off; then it checks every promise, prints the figures as
# key=value lines and exits 1 if one broke. make test runs a short version.
CHAOS_DURATION ?= 3m
chaos: deps
	$(GO) build -o bin/coordinator ./coordinator
	$(GO) build -o bin/atom ./atom
	$(GO) build -o bin/atom-chaos ./test/chaos/cmd/chaos
	./bin/atom-chaos --bin bin --duration $(CHAOS_DURATION)

# The main job end to end, narrated: three coordinator servers, a local
# cluster of simulated nodes, an MPI job, a service, preemption, quota, a
# leader killed (test/demo). Exits non-zero naming the step that failed.
demo: deps deps-mpi deps-cache
	$(GO) build -o bin/coordinator ./coordinator
	$(GO) build -o bin/atom ./atom
	$(GO) build -o bin/atom-demo-web ./test/demo/web
	$(GO) build -o bin/atom-demo ./test/demo/cmd/demo
	./bin/atom-demo --bin bin

# The images of images/ (cpu, openmpi on Debian, spark, coordinator) built
# without a Docker engine: Debian's buildah from the same Dockerfiles, on a
# debian:bookworm-slim made here with debootstrap, with atom and the
# coordinator built by the host's Go (images/build.sh; images/README.md).
# OCI archives, named localhost/atom/NAME:dev, go to
# ${XDG_CACHE_HOME:-$HOME/.cache}/atom/images/NAME.oci.tar, for
# `ctr -n k8s.io images import`; one key=value line per image. Unchanged
# images are not built again. IMAGES picks some (make images IMAGES=cpu).
IMAGES ?=
images: build deps-images
	$(SUDO) env GO="$$(command -v $(GO))" PATH="$$PATH" HOME="$$HOME" XDG_CACHE_HOME="$(XDG_CACHE_HOME)" ./images/build.sh $(IMAGES)

# buildah and debootstrap for make images, when one is missing (apt-get
# update only if the install fails).
deps-images:
	@if ! command -v buildah >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then \
		echo "installing buildah and debootstrap: apt-get install -y buildah debootstrap"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y buildah debootstrap || \
		{ $(SUDO) apt-get -o DPkg::Lock::Timeout=300 update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y buildah debootstrap; }; \
	fi

# The dashboard's browser tests (test/ui): Debian's chromium, and node and
# npm when missing (apt-get update only if the install fails); npm's
# playwright-core as test/ui/package-lock.json pins it, installed with npm
# ci into ${XDG_CACHE_HOME:-$HOME/.cache}/atom/playwright-core-$(PLAYWRIGHT_VERSION)
# (or $ATOM_PLAYWRIGHT) once and reused while it holds the same lock file.
# The tests find it in ATOM_PLAYWRIGHT, exported here.
PLAYWRIGHT_VERSION ?= 1.61.1
ATOM_PLAYWRIGHT    ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/atom/playwright-core-$(PLAYWRIGHT_VERSION)
export ATOM_PLAYWRIGHT
deps-ui:
	@pkgs=""; command -v chromium >/dev/null 2>&1 || pkgs="chromium"; \
	command -v node >/dev/null 2>&1 || pkgs="$$pkgs nodejs"; command -v npm >/dev/null 2>&1 || pkgs="$$pkgs npm"; \
	if [ -n "$$pkgs" ]; then \
		echo "installing the browser tests' browser and node: apt-get install -y $$pkgs"; \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y $$pkgs || \
		{ $(SUDO) apt-get -o DPkg::Lock::Timeout=300 update && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y $$pkgs; }; \
	fi
	@if ! cmp -s test/ui/package-lock.json '$(ATOM_PLAYWRIGHT)/.installed'; then \
		echo "installing playwright-core $(PLAYWRIGHT_VERSION) into $(ATOM_PLAYWRIGHT)"; \
		rm -rf '$(ATOM_PLAYWRIGHT)' && mkdir -p '$(ATOM_PLAYWRIGHT)' && \
		cp test/ui/package.json test/ui/package-lock.json '$(ATOM_PLAYWRIGHT)/' && \
		(cd '$(ATOM_PLAYWRIGHT)' && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) && \
		cp test/ui/package-lock.json '$(ATOM_PLAYWRIGHT)/.installed' || \
		{ echo "deps-ui: npm ci of playwright-core $(PLAYWRIGHT_VERSION) into $(ATOM_PLAYWRIGHT) failed" >&2; exit 1; }; \
	fi

# The dashboard's server time (test/benchui): the Jobs, Queue, Quotas and
# Nodes pages over 10,000 jobs and 1,000 nodes made by the real state
# machine and scheduling core, for an admin and a user; key=value lines,
# the last ui_page_p99_ms (target <= 200).
bench-ui: deps
	$(GO) run ./test/benchui

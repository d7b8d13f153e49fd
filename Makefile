# SPDX-License-Identifier: GPL-2.0
#
# loopfs: build, package and test.  The module's object list lives in Kbuild;
# this file only drives kbuild, the test builds, DKMS and the QEMU harness.
#
#   make [KVER=<kver>|KDIR=<dir>]  build loopfs.ko in place
#   make modules-all               build for every supported kernel in .build/<kver>/, -Werror
#   make tests-build               build the userspace tests into .build/tests/
#                                  (and, in its root, for each older release)
#   make check [SUITES=...] [KERNELS=...]   everything, in QEMU guests (see README.md)
#   make soak [SOAK_ROUNDS=5]      the guest suites N times per kernel, fresh seeds
#   make demo                      boot a 6.1 guest and show loopfs at work
#   make deps                      apt-get install what all of the above needs
#   make dkms-install | dkms-remove
#   make dkms-tree DKMS_TREE=<dir> the DKMS source tree, copied into <dir>
#   make deb                       loopfs-dkms, loopfs-tools and loopfs-nri .debs in .build/deb/
#   make nri-image                 the NRI plugin's OCI image for the DaemonSet, in .build/go/
#   make clean

.DEFAULT_GOAL := all

KVER ?= $(shell uname -r)
KDIR ?= /lib/modules/$(KVER)/build
BUILD := $(CURDIR)/.build
HARNESS := $(CURDIR)/tests/harness

# The package version has one home: dkms.conf.
VERSION = $(shell sed -n 's/^PACKAGE_VERSION="\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' dkms.conf)

# `make -s version` prints it, for the scripts and debian/rules.
version:
	@echo $(VERSION)

# Files a DKMS source tree needs (everything kbuild reads plus this Makefile).
# An in-place build leaves loopfs.mod.c here: output, not source.
MODULE_SRCS = Kbuild compat.mk $(filter-out %.mod.c,$(wildcard *.c *.h))
DKMS_FILES = Makefile dkms.conf $(MODULE_SRCS)

.PHONY: all modules modules-all tests-build tools-build deps check soak demo lint clean \
	dkms-install dkms-remove dkms-tree deb nri-image version

all: modules

modules:
	@if [ ! -d "$(KDIR)" ]; then \
		echo "No kernel build tree at $(KDIR)."; \
		echo "Install linux-headers-$(KVER), or pass KVER=<version> or KDIR=<dir>."; \
		exit 1; \
	fi
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

# Each kernel gets its own copy of the sources so that builds never share
# objects; warnings are errors here (this is what CI and guests use).
modules-all:
	@kvers="$$($(HARNESS)/kvers.sh all)"; \
	if [ -z "$$kvers" ]; then \
		echo "modules-all: no supported kernel headers found (run 'make deps')"; \
		exit 1; \
	fi; \
	for k in $$kvers; do \
		$(HARNESS)/build-module.sh "$$k" || exit 1; \
	done

# --- userspace tests -------------------------------------------------------

KSELFTEST := $(BUILD)/kselftest
KSRC_TARBALL := /usr/src/linux-source-6.1.tar.xz

# Every test program links the test library (tests/lib/) and includes
# loopfs_abi.h from the top of the tree for the names the module shows.
TESTLIB_HDRS = tests/lib/loopfs_test.h loopfs_abi.h
# Where the test programs and tools go: .build here; a release root whose C
# library is older than this machine's builds its own (build-userland.sh).
TESTS_OUT ?= $(BUILD)
TESTLIB_OBJ = $(TESTS_OUT)/tests/lib/loopfs_test.o
TEST_CFLAGS = -O2 -Wall -Werror -D_GNU_SOURCE -I$(CURDIR) -I$(CURDIR)/tests/lib -pthread
TEST_LDLIBS = -pthread

SELFTEST_SRCS = $(wildcard tests/selftests/*.c)
SELFTEST_BINS = $(patsubst tests/selftests/%.c,$(TESTS_OUT)/tests/selftests/%,$(SELFTEST_SRCS))

# The fuzzer and the stress test: built here, run in the guest by
# tests/fuzz/fuzz.sh and tests/stress/stress.sh.
LOAD_BINS = $(TESTS_OUT)/tests/fuzz/fuzz $(TESTS_OUT)/tests/stress/stress

# Helper programs of the shell suites in tests/security/ (not suites themselves).
SECURITY_SRCS = $(wildcard tests/security/*.c)
SECURITY_BINS = $(patsubst tests/security/%.c,$(TESTS_OUT)/tests/security/%,$(SECURITY_SRCS))

# The fault-injection sweep of make check-debug (tests/debug/faults.sh).
DEBUG_BINS = $(TESTS_OUT)/tests/debug/fault-sweep

# loopfs-run's test helper (tests/tools/loopfs-run.sh): the mount API calls
# of a container, from the tools' own mount_api.h.
TOOL_TEST_BINS = $(TESTS_OUT)/tests/tools/mnt-probe

tests-build: $(SELFTEST_BINS) $(LOAD_BINS) $(SECURITY_BINS) $(DEBUG_BINS) \
		$(TOOL_TEST_BINS) tools-build
ifneq ($(RELEASE_USERLANDS),0)
	@$(HARNESS)/build-userland.sh
	@$(HARNESS)/build-go.sh
endif

$(KSELFTEST)/kselftest_harness.h $(KSELFTEST)/kselftest.h:
	@mkdir -p $(KSELFTEST)
	tar -xJf $(KSRC_TARBALL) -C $(KSELFTEST) --strip-components=4 \
		linux-source-6.1/tools/testing/selftests/kselftest_harness.h \
		linux-source-6.1/tools/testing/selftests/kselftest.h
	@touch $(KSELFTEST)/kselftest_harness.h $(KSELFTEST)/kselftest.h

$(TESTLIB_OBJ): tests/lib/loopfs_test.c $(TESTLIB_HDRS)
	@mkdir -p $(@D)
	gcc $(TEST_CFLAGS) -c -o $@ $<

$(TESTS_OUT)/tests/selftests/%: tests/selftests/%.c $(TESTLIB_OBJ) $(TESTLIB_HDRS) \
		$(KSELFTEST)/kselftest_harness.h $(KSELFTEST)/kselftest.h
	@mkdir -p $(@D)
	gcc $(TEST_CFLAGS) -I$(KSELFTEST) -o $@ $< $(TESTLIB_OBJ) $(TEST_LDLIBS)

$(LOAD_BINS) $(SECURITY_BINS) $(DEBUG_BINS): $(TESTS_OUT)/tests/%: tests/%.c $(TESTLIB_OBJ) $(TESTLIB_HDRS)
	@mkdir -p $(@D)
	gcc $(TEST_CFLAGS) -o $@ $< $(TESTLIB_OBJ) $(TEST_LDLIBS)

$(TOOL_TEST_BINS): $(TESTS_OUT)/tests/%: tests/%.c tools/mount_api.h $(TESTLIB_OBJ) $(TESTLIB_HDRS)
	@mkdir -p $(@D)
	gcc $(TEST_CFLAGS) -I$(CURDIR)/tools -o $@ $< $(TESTLIB_OBJ) $(TEST_LDLIBS)

tools-build:
	@if [ -f tools/Makefile ]; then $(MAKE) -C tools O=$(TESTS_OUT)/tools; fi

# --- machine set-up ------------------------------------------------------

deps:
	@$(HARNESS)/deps.sh

# --- the two commands ------------------------------------------------------

check:
	@MAKE="$(MAKE)" $(HARNESS)/check.sh

# The guest suites SOAK_ROUNDS times (default 5) per kernel with fresh seeds.
soak:
	@MAKE="$(MAKE)" $(HARNESS)/soak.sh

demo:
	@$(HARNESS)/demo.sh

# checkpatch --strict and kernel-doc on the module sources (also part of
# check; sparse runs in every module build)
lint:
	@tests/lint/lint.sh

# --- DKMS --------------------------------------------------------------------

DKMS_KVERS ?= $(shell $(HARNESS)/kvers.sh host 2>/dev/null)
DKMS_SRC = /usr/src/loopfs-$(VERSION)

dkms-install:
	@test -n "$(VERSION)" || { echo "dkms.conf has no PACKAGE_VERSION"; exit 1; }
	-dkms remove -m loopfs -v $(VERSION) --all >/dev/null 2>&1
	rm -rf $(DKMS_SRC)
	mkdir -p $(DKMS_SRC)
	cp -p $(DKMS_FILES) $(DKMS_SRC)/
	dkms add -m loopfs -v $(VERSION)
	@for k in $(DKMS_KVERS); do \
		echo "dkms install loopfs/$(VERSION) for $$k"; \
		dkms build -m loopfs -v $(VERSION) -k "$$k" && \
		dkms install -m loopfs -v $(VERSION) -k "$$k" || exit 1; \
	done

dkms-remove:
	@test -n "$(VERSION)" || { echo "dkms.conf has no PACKAGE_VERSION"; exit 1; }
	-dkms remove -m loopfs -v $(VERSION) --all
	rm -rf $(DKMS_SRC)

# The same source tree written into DKMS_TREE=<dir> and nothing else done:
# the loopfs-dkms package ships it as /usr/src/loopfs-<version>/.
dkms-tree:
	@test -n "$(DKMS_TREE)" || { echo "dkms-tree: set DKMS_TREE=<dir>"; exit 1; }
	install -d $(DKMS_TREE)
	install -p -m 0644 $(DKMS_FILES) $(DKMS_TREE)/

# The image deploy/kubernetes/loopfs-nri.yaml runs, localhost/loopfs-nri:<v>,
# as an OCI archive that `ctr -n k8s.io images import` takes; built with the
# plugin in the newest release's root, whose Go and NRI library it needs.
nri-image:
	@$(HARNESS)/build-go.sh
	@test -f $(BUILD)/go/loopfs-nri.oci.tar
	@echo "make nri-image: $(BUILD)/go/loopfs-nri.oci.tar (localhost/loopfs-nri:$(VERSION))"

# --- Debian packages ---------------------------------------------------------

DEB_OUT = $(BUILD)/deb

# loopfs-dkms_<v>_all.deb and loopfs-tools_<v>_<arch>.deb, with the debug
# symbols, .buildinfo and .changes, into .build/deb/. dpkg-buildpackage
# writes only to the parent directory, so every file the .changes lists is
# moved from there. The version stays single-sourced: debian/rules stops the
# build when debian/changelog's version is not PACKAGE_VERSION of dkms.conf.
# Then loopfs-nri_<v>_<arch>.deb, from the same source, built in the newest
# release's root: this machine's release has no NRI library for Go.
deb:
	@command -v dpkg-buildpackage >/dev/null || \
		{ echo "make deb: apt-get install dpkg-dev debhelper dh-dkms libseccomp-dev"; exit 1; }
	dpkg-buildpackage -us -uc -b -Ppkg.loopfs.no-nri
	@mkdir -p $(DEB_OUT)
	@changes=../loopfs_$(VERSION)_$$(dpkg --print-architecture).changes; \
	files=$$(awk '/^Files:/ { f = 1; next } /^[^ ]/ { f = 0 } f { print $$5 }' $$changes); \
	for f in $$files; do mv ../$$f $(DEB_OUT)/ || exit 1; done; \
	mv $$changes $(DEB_OUT)/ && \
	echo "make deb: in $(DEB_OUT)/:" $$files $${changes#../}
	$(HARNESS)/build-nri-deb.sh $(DEB_OUT)

# --- cleaning ----------------------------------------------------------------

clean:
	rm -rf $(BUILD)
	rm -rf *.o *.ko *.mod *.mod.c *.mod.o .*.cmd *.o.d .*.o.d *.symvers *.order \
		.tmp_versions .cache.mk .module-common.o *.dwo .checkpatch-camelcase.git.
	@if [ -f tools/Makefile ]; then $(MAKE) -C tools clean; fi

# 'make bench' and 'make check-debug' have their own makefiles.
-include bench/bench.mk
-include tests/debug/debug.mk

/* version.h - the release both binaries print with --version. The images
 * are tagged with it (Makefile), and the Helm chart's appVersion must equal
 * it (e2e/tests/chart.sh). */
#ifndef MWJ_VERSION_H
#define MWJ_VERSION_H

#define MWJ_RELEASE "0.1.0"

#endif

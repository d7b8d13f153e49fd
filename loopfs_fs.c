// SPDX-License-Identifier: GPL-2.0
/*
 * loopfs.ko is linked from several objects, and none of them may be named
 * like the module itself: its filesystem half, loopfs.c, is compiled as
 * this object.
 */
#include "loopfs.c"

/*
 * itrcstrt.h: the structures of VA/Java's tracing VM user-library API (its readme, section
 * 5b), with the entry points a user library exports (section 5) and the support library
 * function libjlive.so exports (section 6).
 *
 * As jlive fills them:
 * - strings are UTF-8, not NUL-terminated, valid only during the call; a length of 0 comes
 *   with a NULL pointer;
 * - class names are Java's dotted names (java.lang.String, Outer$Inner); an array's
 *   Allocate names its element type (int, java.lang.String) and gives its dimensions as
 *   `arity`;
 * - object IDs are jlive's: 1, 2, 3... in order of first sight; a static method's receiver,
 *   and a class in a field report, is its Class object's ID, 2^32 + the class's number;
 * - sizeInLongs counts 32-bit words (the object's size in bytes / 4, rounded up).
 */
#ifndef ITRCSTRT_H
#define ITRCSTRT_H

#include "itrccnst.h"

struct InsEventHeader {
    unsigned long event; /* InsTrcEvent* */
    unsigned long vmID;  /* as given to InstrumentTraceStartup */
};

struct InsEventTypeMethod {
    unsigned long methodEventFlags; /* InstrumentMethodEvent* */
    unsigned long stackDepth;       /* frames on the thread's stack, this method's included */
    unsigned long receiver;         /* object ID; 0 in a constructor before super() returned
                                       (capture=bci) or with objects=off */
    char *methodName;
    unsigned long methodNameSize;
    char *className;
    unsigned long classNameSize;
};

struct InsEventTypeOIDRename {
    unsigned long source;
    unsigned long destination;
};

struct InsEventTypeOIDRangeRename {
    unsigned long sourceStart;
    unsigned long sourceEnd;
    unsigned long destination;
};

struct InsEventTypeOIDDelete {
    unsigned long oid;
};

struct InsEventTypeOIDRangeDelete {
    unsigned long start;
    unsigned long end;
};

struct InsEventTypeAllocObj {
    unsigned long allocEventFlags;
    char *className;
    unsigned long classNameSize;
};

struct InsEventTypeAllocArrObj {
    char *className; /* the element type */
    unsigned long classNameSize;
    unsigned long arity; /* dimensions, 1 or more */
};

struct InsEventTypeAllocate {
    unsigned long oid;
    unsigned long sizeInLongs;
    unsigned long arrayFlag; /* 0: allocBody.object, 1: allocBody.array */
    union {
        struct InsEventTypeAllocObj object;
        struct InsEventTypeAllocArrObj array;
    } allocBody;
};

struct InsEventTypeStartFieldReport {
    unsigned long oid;
    unsigned long type; /* InstrumentFREventType* */
    unsigned long reportEventFlags;
    char *className; /* of the object; an array's own type, e.g. [LNode; or [I */
    unsigned long classNameSize;
};

struct InsEventTypeFieldReport {
    unsigned long oid; /* an object the reported one refers to */
};

struct InsEventTypeUserEvent {
    unsigned long msgEventFlags;
    char *msg;
    unsigned long msgSize;
};

/* What InstrumentTraceEvent receives: the header, then the event's structure. */
struct InsEventInfo {
    struct InsEventHeader header;
    union {
        struct InsEventTypeMethod method;
        struct InsEventTypeOIDRename oidRename;
        struct InsEventTypeOIDRangeRename oidRangeRename;
        struct InsEventTypeOIDDelete oidDelete;
        struct InsEventTypeOIDRangeDelete oidRangeDelete;
        struct InsEventTypeAllocate allocate;
        struct InsEventTypeStartFieldReport startFieldReport;
        struct InsEventTypeFieldReport fieldReport;
        struct InsEventTypeUserEvent userEvent;
    } eventBody;
};

/* Exported by the user library (all five must be there; 0 is success). */
unsigned long InstrumentTraceStartup(unsigned long vmID);
unsigned long InstrumentTraceShutdown(void);
unsigned long InstrumentTraceBegin(unsigned long vmID, unsigned long flags);
unsigned long InstrumentTraceEnd(void);
unsigned long InstrumentTraceEvent(struct InsEventInfo *event);

/* Exported by libjlive.so (link with -ljlive, or leave undefined in the library: the JVM has
 * loaded libjlive.so before it). Not to be called between a collection's start and end
 * events. A thread the JVM does not know answers "", -1, "". 0 is success. */
unsigned long InstrumentSupportCurrentThreadDetails(unsigned long vmID, unsigned long *flags,
                                                    char **name, unsigned long *nameLength,
                                                    long *priority, char **groupName,
                                                    unsigned long *groupNameLength);

#endif

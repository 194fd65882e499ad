/*
 * itrccnst.h: the constants of VA/Java's tracing VM user-library API, as jlive serves it.
 *
 * VA/Java's document (readme.txt of the tracing VM, sections 4 to 6) names these constants
 * but gives no values: the values here are jlive's. The InsTrcType* flags are those of
 * com.ibm.uvm.instrumenting.InstrumentVMSupport in jlive-api.jar; a library compiled against
 * this header agrees with libjlive.so.
 */
#ifndef ITRCCNST_H
#define ITRCCNST_H

/* Tracing flags: InstrumentTraceBegin's `flags`, one of each group OR'ed together. */
#define InsTrcTypeExeOn       0x001UL /* method entries and exits */
#define InsTrcTypeExeOnLight  0x002UL /* method entries only */
#define InsTrcTypeExeOff      0x004UL /* no method events */
#define InsTrcTypeGCOn        0x010UL /* collections start/end, and object deletions */
#define InsTrcTypeGCOnLight   0x020UL /* collections start/end only */
#define InsTrcTypeGCOff       0x040UL /* no memory management events */
#define InsTrcTypeAllocOn     0x100UL /* object and array allocations */
#define InsTrcTypeAllocOff    0x200UL /* no allocation events */

/* Event codes: InsEventHeader.event. */
#define InsTrcEventMethodEnter        1UL
#define InsTrcEventMethodLeave        2UL
#define InsTrcEventScavengeStart      3UL  /* a young collection begins */
#define InsTrcEventScavengeEnd        4UL
#define InsTrcEventGGCStart           5UL  /* a full (global) collection begins */
#define InsTrcEventGGCEnd             6UL
#define InsTrcEventOIDRename          7UL  /* never sent by jlive: IDs never change */
#define InsTrcEventOIDRangeRename     8UL  /* never sent by jlive */
#define InsTrcEventOIDDelete          9UL
#define InsTrcEventOIDRangeDelete     10UL /* never sent by jlive */
#define InsTrcEventAllocate           11UL
#define InsTrcEventStartFieldReport   12UL
#define InsTrcEventFieldReport        13UL
#define InsTrcEventEndFieldReport     14UL
#define InsTrcEventUserEvent          15UL

/* InsEventTypeMethod.methodEventFlags. jlive's strings are UTF-8: the *DB (wide character)
 * flags are never set. */
#define InstrumentMethodEventMethodDB 0x01UL
#define InstrumentMethodEventClassDB  0x02UL
#define InstrumentMethodEventStatic   0x04UL
#define InstrumentMethodEventNative   0x08UL
#define InstrumentMethodEventSync     0x10UL

/* InsEventTypeAllocObj.allocEventFlags. */
#define InstrumentAllocEventClassDB   0x01UL

/* InsEventTypeStartFieldReport.type and reportEventFlags. */
#define InstrumentFREventTypeJava      0UL
#define InstrumentFREventTypeJavaArray 1UL
#define InstrumentFREventTypeJavaClass 2UL
#define InstrumentReportEventClassDB   0x01UL

/* InsEventTypeUserEvent.msgEventFlags. */
#define InstrumentUserEventDB         0x01UL

/* InstrumentSupportCurrentThreadDetails' flags. */
#define InstrumentThreadNameDB        0x01UL
#define InstrumentThreadGroupNameDB   0x02UL

#endif

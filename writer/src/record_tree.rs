//! `record=tree`: instead of every method entry and exit, each thread's calling-context tree
//! of the burst (calls, and inclusive, self, shortest and longest ticks per context), written
//! at the burst's end (a thread's at its end, if it ends first) as [`Event::ContextEnter`] /
//! [`Event::ContextLeave`] pairs, depth first
//! (TPTP's agMethodEntry / agMethodExit). Every other event goes through as it comes: classes
//! and threads are defined before the contexts that name them, and allocations, GC and user
//! events keep their times. An hour-long burst costs the distinct contexts, not the calls.
//!
//! ```text
//! BurstBegin
//!   ClassDefine / ThreadDefine / GcStart / ... as they come
//!   (entries and exits: counted into the trees, nothing written)
//!   ContextEnter main: Demo.main calls 1 base 120 min 9000 max 9000
//!     ContextEnter main: Demo.price calls 300 base 8000 min 20 max 95
//!     ContextLeave main: Demo.price
//!   ContextLeave main: Demo.main
//! BurstEnd
//! ```

use crate::calltree::TreesByThread;
use crate::model::{Context, Ending, Enter, Event, Leave, Sink, ThreadId};
use std::io;

/// Wraps a format's sink: method events become trees, written at each burst's end.
pub struct TreeSink<S> {
    inner: S,
    trees: TreesByThread,
    /// The tree of the thread of the last method event, out of the map: records come in
    /// per-thread batches, so most events need no look-up.
    current: Option<(ThreadId, crate::calltree::ThreadTree)>,
}

impl<S: Sink> TreeSink<S> {
    pub fn new(inner: S) -> TreeSink<S> {
        TreeSink {
            inner,
            trees: TreesByThread::default(),
            current: None,
        }
    }

    /// The tree of `thread`, made current.
    #[inline]
    fn tree(&mut self, thread: ThreadId) -> &mut crate::calltree::ThreadTree {
        if self.current.as_ref().map(|c| c.0) != Some(thread) {
            self.put_back();
            let tree = self.trees.remove(&thread).unwrap_or_default();
            self.current = Some((thread, tree));
        }
        &mut self.current.as_mut().expect("made current").1
    }

    /// Puts the current tree back into the map.
    fn put_back(&mut self) {
        if let Some((thread, tree)) = self.current.take() {
            self.trees.insert(thread, tree);
        }
    }

    pub fn into_inner(self) -> S {
        self.inner
    }

    /// Closes every open frame at `ticks` and writes the trees, threads in ID order.
    fn write_trees(&mut self, ticks: u64) -> io::Result<()> {
        self.put_back();
        let mut threads: Vec<ThreadId> = self.trees.keys().copied().collect();
        threads.sort_unstable();
        for thread in threads {
            self.write_tree(thread, ticks)?;
        }
        Ok(())
    }

    /// Closes a thread's open frames at `ticks` and writes its tree, depth first.
    fn write_tree(&mut self, thread: ThreadId, ticks: u64) -> io::Result<()> {
        self.put_back();
        let Some(mut tree) = self.trees.remove(&thread) else {
            return Ok(());
        };
        while !tree.stack_is_empty() {
            tree.leave(ticks.max(tree.last()));
        }
        let mut open: Vec<crate::model::MethodId> = Vec::new();
        for (node, depth) in tree.depth_first() {
            while open.len() >= depth {
                let method = open.pop().expect("open");
                self.inner.event(&Event::ContextLeave {
                    ticks,
                    thread,
                    method,
                })?;
            }
            let n = &tree.nodes[node];
            let method = n.method.expect("only the root has none");
            self.inner.event(&Event::ContextEnter(Context {
                ticks,
                thread,
                method,
                calls: n.calls,
                base_ticks: tree.self_ticks(node),
                min_ticks: if n.calls == 0 { 0 } else { n.min_ticks },
                max_ticks: n.max_ticks,
            }))?;
            open.push(method);
        }
        while let Some(method) = open.pop() {
            self.inner.event(&Event::ContextLeave {
                ticks,
                thread,
                method,
            })?;
        }
        Ok(())
    }
}

impl<S: Sink> Sink for TreeSink<S> {
    fn event(&mut self, event: &Event) -> io::Result<()> {
        match event {
            Event::MethodEnter(e) => self.enter(*e),
            Event::MethodLeave(l) => self.leave(*l),
            Event::BurstBegin { .. } => {
                self.current = None;
                self.trees.clear();
                self.inner.event(event)
            }
            Event::BurstEnd { ticks, .. } => {
                self.write_trees(*ticks)?;
                self.inner.event(event)
            }
            // A thread that ends mid-burst has its tree written then, before its end: its
            // memory goes with it, and its frames close at its end.
            Event::ThreadEnd { ticks, thread } => {
                self.write_tree(*thread, *ticks)?;
                self.inner.event(event)
            }
            // The rest passes as it is.
            Event::VmInit { .. }
            | Event::VmDeath { .. }
            | Event::ThreadDefine(_)
            | Event::ThreadStart { .. }
            | Event::ClassDefine(_)
            | Event::ObjectDefine(_)
            | Event::Alloc { .. }
            | Event::ContextEnter(_)
            | Event::ContextLeave { .. }
            | Event::Free { .. }
            | Event::GcStart { .. }
            | Event::GcFinish { .. }
            | Event::UserEvent { .. }
            | Event::Sync(_)
            | Event::Values(_)
            | Event::Heap { .. } => self.inner.event(event),
        }
    }

    #[inline]
    fn enter(&mut self, e: Enter) -> io::Result<()> {
        self.tree(e.thread).enter(e.method, e.ticks);
        Ok(())
    }

    #[inline]
    fn leave(&mut self, l: Leave) -> io::Result<()> {
        self.tree(l.thread).leave(l.ticks);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }

    fn finish(&mut self, ending: &Ending) -> io::Result<()> {
        // A burst is closed before the file is: anything left belongs to none.
        self.current = None;
        self.trees.clear();
        self.inner.finish(ending)
    }

    /// The format's events: what the file holds.
    fn events(&self) -> u64 {
        self.inner.events()
    }

    fn bytes(&self) -> u64 {
        self.inner.bytes()
    }

    fn max_classes(&self) -> u32 {
        self.inner.max_classes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Collect;
    use crate::model::MethodId;

    fn m(index: u16) -> MethodId {
        MethodId { class: 1, index }
    }

    fn call(s: &mut TreeSink<Collect>, thread: ThreadId, method: MethodId, from: u64, to: u64) {
        s.enter(Enter {
            ticks: from,
            thread,
            method,
            object: crate::model::NO_OBJECT,
            depth: 1,
            ticket: 1,
        })
        .unwrap();
        s.leave(Leave {
            ticks: to,
            thread,
            method,
            depth: 1,
            ticket: 1,
            overhead: 0,
        })
        .unwrap();
    }

    #[test]
    fn each_context_is_written_once_with_its_calls_times_and_callees_inside_it() {
        let mut s = TreeSink::new(Collect::default());
        s.event(&Event::BurstBegin { ticks: 0, burst: 1 }).unwrap();
        // Thread 1: a() calls b() twice (3 and 5 ticks), then ends; a() took 20.
        s.enter(Enter {
            ticks: 10,
            thread: 1,
            method: m(0),
            object: crate::model::NO_OBJECT,
            depth: 1,
            ticket: 1,
        })
        .unwrap();
        call(&mut s, 1, m(1), 12, 15);
        call(&mut s, 1, m(1), 16, 21);
        s.leave(Leave {
            ticks: 30,
            thread: 1,
            method: m(0),
            depth: 1,
            ticket: 1,
            overhead: 0,
        })
        .unwrap();
        s.event(&Event::ThreadEnd {
            ticks: 31,
            thread: 1,
        })
        .unwrap();
        // Thread 2: c() still running when the burst ends at 100.
        s.enter(Enter {
            ticks: 40,
            thread: 2,
            method: m(2),
            object: crate::model::NO_OBJECT,
            depth: 1,
            ticket: 1,
        })
        .unwrap();
        s.event(&Event::BurstEnd {
            ticks: 100,
            burst: 1,
        })
        .unwrap();
        let got: Vec<String> = s
            .into_inner()
            .0
            .iter()
            .map(|e| match e {
                Event::ContextEnter(c) => format!(
                    "enter t{} m{} calls={} base={} min={} max={}",
                    c.thread, c.method.index, c.calls, c.base_ticks, c.min_ticks, c.max_ticks
                ),
                Event::ContextLeave { thread, method, .. } => {
                    format!("leave t{} m{}", thread, method.index)
                }
                e => e.name().to_string(),
            })
            .collect();
        assert_eq!(
            got,
            [
                "BURST_BEGIN",
                "enter t1 m0 calls=1 base=12 min=20 max=20",
                "enter t1 m1 calls=2 base=8 min=3 max=5",
                "leave t1 m1",
                "leave t1 m0",
                "THREAD_END",
                "enter t2 m2 calls=1 base=60 min=60 max=60",
                "leave t2 m2",
                "BURST_END",
            ]
        );
    }
}

//! Each thread's calling-context tree: a node per distinct chain of calls from the thread's
//! outermost traced frame, with its calls, inclusive and self time (`jlive tree` prints them,
//! `record=tree` writes them). Built one event at a time: its memory grows with the
//! distinct calling contexts, not with the events.
//!
//! Frames still open when a burst ends (or the file does) are closed at that moment; a leave
//! whose entry came before the burst is not counted (as `jlive stats` does).

use crate::keyhash::KeyHasher;
use crate::model::{Event, MethodId, ThreadId};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// Each thread's tree, by thread ID.
pub type TreesByThread = HashMap<ThreadId, ThreadTree, BuildHasherDefault<KeyHasher>>;

/// One calling context of a thread.
#[derive(Clone, Debug)]
pub struct Node {
    /// None for a thread's root (no method).
    pub method: Option<MethodId>,
    pub calls: u64,
    pub inclusive_ticks: u64,
    /// The shortest and longest call (u64::MAX and 0 before the first).
    pub min_ticks: u64,
    pub max_ticks: u64,
    pub children: Vec<usize>,
    /// The callee found last from here, and its node: a loop calls the same one again.
    last_callee: Option<(MethodId, usize)>,
}

impl Node {
    fn new(method: Option<MethodId>) -> Node {
        Node {
            method,
            calls: 0,
            inclusive_ticks: 0,
            min_ticks: u64::MAX,
            max_ticks: 0,
            children: Vec::new(),
            last_callee: None,
        }
    }
}

/// A thread's calling-context tree: node 0 is the root.
#[derive(Clone, Debug)]
pub struct ThreadTree {
    pub nodes: Vec<Node>,
    index: HashMap<(usize, MethodId), usize, BuildHasherDefault<KeyHasher>>,
    /// Open frames: (node, ticks at entry).
    stack: Vec<(usize, u64)>,
    last_ticks: u64,
    /// Open contexts read from a tree (`record=tree`): (node, base ticks, callees' ticks).
    contexts: Vec<(usize, u64, u64)>,
}

impl Default for ThreadTree {
    fn default() -> Self {
        ThreadTree {
            nodes: vec![Node::new(None)],
            index: HashMap::default(),
            stack: Vec::new(),
            last_ticks: 0,
            contexts: Vec::new(),
        }
    }
}

impl ThreadTree {
    /// The node of `method` called from `parent`, made on first sight.
    #[inline]
    fn child(&mut self, parent: usize, method: MethodId) -> usize {
        if let Some((m, node)) = self.nodes[parent].last_callee {
            if m == method {
                return node;
            }
        }
        let node = self.child_looked_up(parent, method);
        self.nodes[parent].last_callee = Some((method, node));
        node
    }

    fn child_looked_up(&mut self, parent: usize, method: MethodId) -> usize {
        let next = self.nodes.len();
        let node = *self.index.entry((parent, method)).or_insert(next);
        if node == next {
            self.nodes.push(Node::new(Some(method)));
            self.nodes[parent].children.push(node);
        }
        node
    }

    pub fn enter(&mut self, method: MethodId, ticks: u64) {
        let parent = self.stack.last().map_or(0, |&(n, _)| n);
        let node = self.child(parent, method);
        self.nodes[node].calls += 1;
        self.stack.push((node, ticks));
        self.last_ticks = ticks;
    }

    pub fn leave(&mut self, ticks: u64) {
        if let Some((node, entered)) = self.stack.pop() {
            let took = ticks.saturating_sub(entered);
            let n = &mut self.nodes[node];
            n.inclusive_ticks += took;
            n.min_ticks = n.min_ticks.min(took);
            n.max_ticks = n.max_ticks.max(took);
        }
        self.last_ticks = ticks;
    }

    /// A context of a tree written by `record=tree`: its totals, its callees to follow.
    fn enter_context(&mut self, c: &crate::model::Context) {
        let parent = self.contexts.last().map_or(0, |&(n, _, _)| n);
        let node = self.child(parent, c.method);
        let n = &mut self.nodes[node];
        n.calls += c.calls;
        n.min_ticks = n.min_ticks.min(c.min_ticks);
        n.max_ticks = n.max_ticks.max(c.max_ticks);
        self.contexts.push((node, c.base_ticks, 0));
    }

    /// The end of a context's callees: its inclusive time is its base and theirs.
    fn leave_context(&mut self) {
        if let Some((node, base, callees)) = self.contexts.pop() {
            let inclusive = base + callees;
            self.nodes[node].inclusive_ticks += inclusive;
            if let Some(parent) = self.contexts.last_mut() {
                parent.2 += inclusive;
            }
        }
    }

    /// Whether no frame is open.
    pub fn stack_is_empty(&self) -> bool {
        self.stack.is_empty()
    }

    /// The latest ticks it saw.
    pub fn last(&self) -> u64 {
        self.last_ticks
    }

    /// Whether it holds no calls.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() == 1
    }

    /// Every node but the root in depth-first order, each with its depth (1 for the
    /// outermost) — parents before their callees, callees in the order first called.
    pub fn depth_first(&self) -> Vec<(usize, usize)> {
        let mut order = Vec::with_capacity(self.nodes.len() - 1);
        let mut todo: Vec<(usize, usize)> = self.nodes[0]
            .children
            .iter()
            .rev()
            .map(|&c| (c, 1))
            .collect();
        while let Some((node, depth)) = todo.pop() {
            order.push((node, depth));
            todo.extend(
                self.nodes[node]
                    .children
                    .iter()
                    .rev()
                    .map(|&c| (c, depth + 1)),
            );
        }
        order
    }

    /// Closes every open frame at `ticks`.
    fn close(&mut self, ticks: u64) {
        while !self.stack.is_empty() {
            self.leave(ticks.max(self.last_ticks));
        }
    }

    /// The thread's traced time: its outermost frames' inclusive time.
    pub fn total_ticks(&self) -> u64 {
        let root = &self.nodes[0];
        root.children
            .iter()
            .map(|&c| self.nodes[c].inclusive_ticks)
            .sum()
    }

    /// A node's own time: its inclusive time less its callees'.
    pub fn self_ticks(&self, node: usize) -> u64 {
        let n = &self.nodes[node];
        let below: u64 = n
            .children
            .iter()
            .map(|&c| self.nodes[c].inclusive_ticks)
            .sum();
        n.inclusive_ticks.saturating_sub(below)
    }
}

/// Every thread's tree of a trace.
#[derive(Clone, Debug, Default)]
pub struct Trees {
    pub threads: TreesByThread,
}

impl Trees {
    pub fn add(&mut self, event: &Event) {
        match event {
            Event::MethodEnter(e) => self
                .threads
                .entry(e.thread)
                .or_default()
                .enter(e.method, e.ticks),
            Event::MethodLeave(l) => {
                if let Some(t) = self.threads.get_mut(&l.thread) {
                    t.leave(l.ticks);
                }
            }
            Event::BurstBegin { ticks, .. } | Event::BurstEnd { ticks, .. } => {
                self.close(*ticks);
            }
            Event::ContextEnter(c) => self.threads.entry(c.thread).or_default().enter_context(c),
            Event::ContextLeave { thread, .. } => {
                if let Some(t) = self.threads.get_mut(thread) {
                    t.leave_context();
                }
            }
            _ => {}
        }
    }

    /// Closes every thread's open frames (at the end of a burst or of the file).
    pub fn close(&mut self, ticks: u64) {
        for t in self.threads.values_mut() {
            t.close(ticks);
        }
    }
}

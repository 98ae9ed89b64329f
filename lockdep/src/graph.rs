//! The class table and the dependency graph, both guarded by the graph lock.
//!
//! Semantics from the kernel's `lock_classes[]`, `locks_after`/`locks_before` lists and
//! `zap_class()`; the storage is our own (hash maps per class, a free list of slots).

use hashbrown::{HashMap, HashSet};
use std::panic::Location;
use std::sync::Arc;

use crate::class::{self, MAX_CLASSES};
use crate::key::KeyRef;
use crate::types::{ClassId, DepKind};

/// Where the two ends of one dependency were acquired, captured when the dependency was first
/// seen.
#[derive(Clone, Debug)]
pub(crate) struct EdgeSites {
    pub prev: &'static Location<'static>,
    pub next: &'static Location<'static>,
    /// The stack of the acquisition that created the dependency, if capture is on.
    pub trace: Option<crate::report::Trace>,
}

/// All the kinds recorded for one ordered pair of classes.
#[derive(Clone, Debug, Default)]
pub(crate) struct Edge {
    /// Bit set of [`DepKind::bit`].
    pub kinds: u8,
    /// The sites of the first dependency of each kind, indexed by [`DepKind::index`].
    pub sites: [Option<EdgeSites>; 4],
}

/// One live lock class.
#[derive(Debug)]
pub(crate) struct ClassNode {
    pub id: ClassId,
    pub name: Arc<str>,
    pub key: KeyRef,
    pub subclass: u8,
    /// Dependencies `self -> other`, by the other class's slot index.
    pub after: HashMap<u32, Edge>,
    /// Slot indexes of classes with a dependency into `self`.
    pub before: HashSet<u32>,
}

/// The class table plus the dependency graph.
#[derive(Default)]
pub(crate) struct Graph {
    pub classes: Vec<Option<ClassNode>>,
    free: Vec<u32>,
    pub by_key: HashMap<(KeyRef, u8), u32>,
    /// Number of (pair, kind) dependencies.
    pub dependency_count: usize,
}

impl Graph {
    /// The live class with this id, if any.
    pub fn class(&self, id: ClassId) -> Option<&ClassNode> {
        match self.classes.get(id.index() as usize) {
            Some(Some(c)) if c.id == id => Some(c),
            _ => None,
        }
    }

    /// The live class in slot `index`.
    pub fn slot(&self, index: u32) -> Option<&ClassNode> {
        self.classes.get(index as usize).and_then(Option::as_ref)
    }

    /// Number of live classes.
    pub fn class_count(&self) -> usize {
        self.classes.len() - self.free.len()
    }

    /// Creates a class for `(key, subclass)`; `Err(())` when [`MAX_CLASSES`] are live.
    pub fn alloc(&mut self, key: KeyRef, subclass: u8, name: &str) -> Result<ClassId, ()> {
        let index = match self.free.pop() {
            Some(i) => i,
            None if self.classes.len() < MAX_CLASSES => {
                self.classes.push(None);
                (self.classes.len() - 1) as u32
            }
            None => return Err(()),
        };
        let id = class::make_live(index);
        let name: Arc<str> = if subclass == 0 {
            Arc::from(name)
        } else {
            Arc::from(format!("{name}/{subclass}"))
        };
        self.classes[index as usize] = Some(ClassNode {
            id,
            name,
            key,
            subclass,
            after: HashMap::new(),
            before: HashSet::new(),
        });
        self.by_key.insert((key, subclass), index);
        Ok(id)
    }

    /// True if the dependency `from -> to` of this kind is recorded.
    pub fn has_kind(&self, from: ClassId, to: ClassId, kind: DepKind) -> bool {
        self.class(from)
            .and_then(|c| c.after.get(&to.index()))
            .is_some_and(|e| e.kinds & kind.bit() != 0)
    }

    /// Records the dependency `from -> to` of this kind. Both classes must be live.
    pub fn add(&mut self, from: ClassId, to: ClassId, kind: DepKind, sites: EdgeSites) {
        let (fi, ti) = (from.index(), to.index());
        let Some(Some(node)) = self.classes.get_mut(fi as usize) else {
            return;
        };
        let edge = node.after.entry(ti).or_default();
        if edge.kinds & kind.bit() == 0 {
            edge.kinds |= kind.bit();
            edge.sites[kind.index()] = Some(sites);
            self.dependency_count += 1;
        }
        if let Some(Some(target)) = self.classes.get_mut(ti as usize) {
            target.before.insert(fi);
        }
    }

    /// Removes a class, every dependency into or out of it, and its key mapping
    /// (the kernel's `zap_class()`). The slot's generation changes, so cached ids and cached
    /// chains that mention the class can never match again.
    pub fn zap(&mut self, index: u32) {
        let Some(node) = self.classes.get_mut(index as usize).and_then(Option::take) else {
            return;
        };
        for (to, edge) in &node.after {
            self.dependency_count -= edge.kinds.count_ones() as usize;
            if let Some(Some(t)) = self.classes.get_mut(*to as usize) {
                t.before.remove(&index);
            }
        }
        for from in &node.before {
            if let Some(Some(f)) = self.classes.get_mut(*from as usize) {
                if let Some(edge) = f.after.remove(&index) {
                    self.dependency_count -= edge.kinds.count_ones() as usize;
                }
            }
        }
        self.by_key.remove(&(node.key, node.subclass));
        class::make_dead(index);
        self.free.push(index);
    }

    /// Zaps every class whose key is `key` (all subclasses).
    pub fn zap_key(&mut self, key: KeyRef) -> usize {
        let slots: Vec<u32> = (0..crate::types::MAX_SUBCLASSES)
            .filter_map(|s| self.by_key.get(&(key, s)).copied())
            .collect();
        for &i in &slots {
            self.zap(i);
        }
        slots.len()
    }

    /// Zaps every class.
    pub fn zap_all(&mut self) {
        for i in 0..self.classes.len() as u32 {
            self.zap(i);
        }
    }
}

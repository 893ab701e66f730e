//! `trawl bag`: BagIt create, validate, update, recover.

use crate::Outcome;
use crate::flags::lowargs::BagCommand;

pub fn run(_b: BagCommand) -> anyhow::Result<Outcome> {
    anyhow::bail!("bag: work in progress")
}

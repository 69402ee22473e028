//! The command lines of `zkr group` and `zkr discover` (their code: `cmd/group.rs`,
//! `cmd/discover.rs`). Apart from `args.rs` so that it imports nothing of zkr.

use clap::{Args, Subcommand};

#[derive(Debug, Args)]
pub struct GroupArgs {
    #[command(subcommand)]
    pub op: GroupOp,
}

#[derive(Debug, Subcommand)]
pub enum GroupOp {
    /// Be member ID of the group at PATH while CMD runs, or until SIGINT/SIGTERM
    Join(JoinArgs),
    /// Print the members of the group at PATH: `ID DATA` per line
    Members(MembersArgs),
}

#[derive(Debug, Args)]
pub struct JoinArgs {
    /// The group's path
    pub path: String,
    /// Our member id (the node PATH/ID)
    #[arg(long, value_name = "ID")]
    pub id: String,
    /// Our member node's data
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub data: String,
    /// The command to run while a member (after `--`)
    #[arg(last = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

#[derive(Debug, Args)]
pub struct MembersArgs {
    /// The group's path
    pub path: String,
}

#[derive(Debug, Args)]
pub struct DiscoverArgs {
    #[command(subcommand)]
    pub op: DiscoverOp,
}

#[derive(Debug, Subcommand)]
pub enum DiscoverOp {
    /// Register an instance of NAME (DYNAMIC) while CMD runs, or until SIGINT/SIGTERM
    Register(RegisterArgs),
    /// Print the instances of NAME: `ID ADDRESS PORT` per line (--json: Curator's JSON)
    List(ListArgs),
    /// Print the service names, one per line
    Names(NamesArgs),
}

#[derive(Debug, Args)]
pub struct RegisterArgs {
    /// The service's name
    pub name: String,
    /// The registry's base path
    #[arg(long, value_name = "PATH")]
    pub base: String,
    /// The instance's address
    #[arg(long, value_name = "HOST")]
    pub address: String,
    /// The instance's port (1..=65535)
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// The instance's id [default: a random UUID]
    #[arg(long, value_name = "ID")]
    pub id: Option<String>,
    /// The instance's payload, any JSON
    #[arg(long, value_name = "JSON")]
    pub payload: Option<String>,
    /// The instance's TLS port (1..=65535)
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub ssl_port: Option<u16>,
    /// The command to run while registered (after `--`)
    #[arg(last = true, value_name = "CMD")]
    pub cmd: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// The service's name
    pub name: String,
    /// The registry's base path
    #[arg(long, value_name = "PATH")]
    pub base: String,
}

#[derive(Debug, Args)]
pub struct NamesArgs {
    /// The registry's base path
    #[arg(long, value_name = "PATH")]
    pub base: String,
}

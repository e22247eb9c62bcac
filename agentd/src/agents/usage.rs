//! `getUsage`: the tokens the answers used, by model and by agent, with their cost where
//! the config prices the model (USD per million tokens).

use std::collections::BTreeMap;

use agent_proto::{AgentUsage, ModelUsage, UsageReport};

use super::AgentService;
use crate::provider::ProviderRegistry;
use crate::session::SessionError;
use crate::store::UsageRow;

impl AgentService {
    /// The usage of one agent (which must exist), or of every agent there is.
    pub async fn usage(&self, agent_id: Option<&str>) -> Result<UsageReport, SessionError> {
        if let Some(id) = agent_id {
            self.get_agent(id).await?;
        }
        let rows = self.store.usage(agent_id).await?;
        Ok(report(&rows, &self.providers))
    }
}

/// The cost in USD of `row`'s tokens, when its model has both prices (a model priced on
/// one side only is not priced).
fn cost(row: &UsageRow, providers: &ProviderRegistry) -> Option<f64> {
    let model = providers.resolve(&row.provider, &row.model)?.model;
    let per_token = |price: f64| price / 1_000_000.0;
    #[allow(clippy::cast_precision_loss)] // token counts stay far below 2^52
    Some(
        row.input_tokens as f64 * per_token(model.input_price?)
            + row.output_tokens as f64 * per_token(model.output_price?),
    )
}

/// Sums `rows` by model and by agent.
fn report(rows: &[UsageRow], providers: &ProviderRegistry) -> UsageReport {
    let add = |sum: &mut Option<f64>, cost: Option<f64>| {
        if let Some(c) = cost {
            *sum = Some(sum.unwrap_or(0.0) + c);
        }
    };
    let mut by_model: BTreeMap<(String, String), ModelUsage> = BTreeMap::new();
    let mut by_agent: BTreeMap<String, AgentUsage> = BTreeMap::new();
    let mut total = UsageReport {
        input_tokens: 0,
        output_tokens: 0,
        answers: 0,
        cost_usd: None,
        unpriced: Vec::new(),
        by_model: Vec::new(),
        by_agent: Vec::new(),
    };
    for row in rows {
        let cost = cost(row, providers);
        let model = by_model
            .entry((row.provider.clone(), row.model.clone()))
            .or_insert_with(|| ModelUsage {
                provider: row.provider.clone(),
                model: row.model.clone(),
                input_tokens: 0,
                output_tokens: 0,
                answers: 0,
                cost_usd: None,
            });
        model.input_tokens += row.input_tokens;
        model.output_tokens += row.output_tokens;
        model.answers += row.answers;
        add(&mut model.cost_usd, cost);
        let agent = by_agent
            .entry(row.agent_id.clone())
            .or_insert_with(|| AgentUsage {
                agent_id: row.agent_id.clone(),
                input_tokens: 0,
                output_tokens: 0,
                answers: 0,
                cost_usd: None,
            });
        agent.input_tokens += row.input_tokens;
        agent.output_tokens += row.output_tokens;
        agent.answers += row.answers;
        add(&mut agent.cost_usd, cost);
        total.input_tokens += row.input_tokens;
        total.output_tokens += row.output_tokens;
        total.answers += row.answers;
        add(&mut total.cost_usd, cost);
    }
    total.unpriced = by_model
        .values()
        .filter(|m| m.cost_usd.is_none())
        .map(|m| format!("{}/{}", m.provider, m.model))
        .collect();
    total.by_model = by_model.into_values().collect();
    total.by_agent = by_agent.into_values().collect();
    total
}

window.__ran.push('analytics-external');

window.__ran.push('block');
